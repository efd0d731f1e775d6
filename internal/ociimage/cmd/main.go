// Command cmd builds Tether's container image as an OCI image layout, with
// no container runtime: see package ociimage, and scripts/build-image.sh,
// which builds the static tether binary and the pinned CLI first.
//
//	go run ./internal/ociimage/cmd -out OUT -tether BIN -cli CLAUDE [flags]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tetherhq/tether/internal/ociimage"
)

func main() {
	os.Exit(run())
}

func run() int {
	out := flag.String("out", "", "the folder to write the OCI image layout to (must not hold one)")
	tether := flag.String("tether", "", "a static tether binary (CGO_ENABLED=0 go build ./cmd/tether)")
	cli := flag.String("cli", "", "the Claude Code CLI's native binary (node_modules/.bin/claude)")
	cliVersion := flag.String("cli-version", "", "the CLI's version, for a label")
	debs := flag.String("debs", defaultDebDir(), "the cache folder of Debian packages (apt-get download fills it)")
	pkgs := flag.String("packages", strings.Join(ociimage.DefaultPackages, ","), "the Debian packages of the base, comma-separated (dependencies are not resolved)")
	version := flag.String("version", "", "Tether's version, for the org.opencontainers.image.version label")
	source := flag.String("source", "", "the source repository's address, for the org.opencontainers.image.source label")
	ref := flag.String("ref", "", "the image's name in the layout (org.opencontainers.image.ref.name), e.g. the version")
	created := flag.Int64("created", 0, "files' and the image's time, Unix seconds (default: $SOURCE_DATE_EPOCH, else 0)")
	flag.Parse()
	if *out == "" || *tether == "" || *cli == "" {
		fmt.Fprintln(os.Stderr, "build-image: -out, -tether and -cli are required")
		flag.Usage()
		return 2
	}
	when := time.Unix(*created, 0)
	if *created == 0 {
		if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
			var n int64
			if _, err := fmt.Sscan(s, &n); err != nil {
				fmt.Fprintf(os.Stderr, "build-image: SOURCE_DATE_EPOCH=%q: %v\n", s, err)
				return 2
			}
			when = time.Unix(n, 0)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	packages := strings.Split(*pkgs, ",")
	if _, err := ociimage.FetchDebs(ctx, *debs, packages); err != nil {
		fmt.Fprintln(os.Stderr, "build-image:", err)
		return 1
	}
	img, err := ociimage.Build(ctx, &ociimage.Options{
		TetherBinary: *tether, CLIBinary: *cli, CLIVersion: *cliVersion,
		DebDir: *debs, Packages: packages,
		Version: *version, Source: *source, Created: when,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-image:", err)
		return 1
	}
	defer os.RemoveAll(img.WorkDir)
	if err := ociimage.WriteLayout(ctx, *out, img, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "build-image:", err)
		return 1
	}
	d, err := img.Digest()
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-image:", err)
		return 1
	}
	fmt.Printf("%s %s\n", *out, d)
	return 0
}

func defaultDebDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "tether", "debs")
	}
	return filepath.Join(os.TempDir(), "tether-debs")
}
