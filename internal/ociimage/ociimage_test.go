package ociimage_test

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/ociimage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ci() bool { return os.Getenv("CI") == "true" }

// need skips the test when a tool is missing, and fails it under CI=true
// (scripts/test.sh installs what the tests need).
func need(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if ci() {
		t.Fatalf("%s: %v (CI=true: scripts/test.sh installs it)", what, err)
	}
	t.Skipf("%s: %v", what, err)
}

func TestBuildOptionsRequired(t *testing.T) {
	_, err := ociimage.Build(context.Background(), &ociimage.Options{TetherBinary: "x"})
	if !errors.Is(err, ociimage.ErrOptions) {
		t.Fatalf("Build without CLIBinary and DebDir: %v, want ErrOptions", err)
	}
}

func TestBadCompressionIsTyped(t *testing.T) {
	for _, level := range []int{42, ociimage.Stored - 1} {
		_, err := ociimage.Build(context.Background(), &ociimage.Options{
			TetherBinary: os.Args[0], CLIBinary: os.Args[0], DebDir: t.TempDir(), WorkDir: t.TempDir(), Compression: level,
		})
		if !errors.Is(err, ociimage.ErrOptions) {
			t.Errorf("Build with gzip level %d: %v, want ErrOptions", level, err)
		}
	}
}

func TestMissingDebIsTyped(t *testing.T) {
	dir := t.TempDir()
	_, err := ociimage.Build(context.Background(), &ociimage.Options{
		TetherBinary: os.Args[0], CLIBinary: os.Args[0], DebDir: dir, Packages: []string{"libc6"}, WorkDir: t.TempDir(),
	})
	var de *ociimage.DebError
	if !errors.Is(err, ociimage.ErrNoDeb) || !errors.As(err, &de) || de.Package != "libc6" {
		t.Fatalf("Build with an empty package cache: %v, want a *DebError for libc6", err)
	}
}

// TestImage builds the whole image into a temporary OCI layout, reads it
// back with go-containerregistry's layout package, checks its
// configuration and files, and runs tether and the CLI from its flattened
// file system under bubblewrap: the base has what the glibc CLI needs.
func TestImage(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the image is linux/amd64, built from this machine's Debian packages")
	}
	cli, err := claudetest.FindCLI(claudetest.DefaultCLIVersion)
	need(t, "the pinned CLI", err)
	_, err = exec.LookPath("dpkg-deb")
	need(t, "dpkg-deb", err)
	ctx := budget(t)
	step := stepper(t, ctx)

	tmp := t.TempDir()
	tether := filepath.Join(tmp, "tether")
	done := step("go build tether (static)")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tether, "github.com/tetherhq/tether/cmd/tether")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	done()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	debs := filepath.Join(cache, "tether", "debs") // shared with scripts/build-image.sh
	done = step("fetch the Debian packages")
	_, err = ociimage.FetchDebs(ctx, debs, ociimage.DefaultPackages)
	need(t, "the Debian packages", err)
	done()

	done = step("build the layers (the CLI's is ~240 MB, stored in gzip)")
	img, err := ociimage.Build(ctx, &ociimage.Options{
		TetherBinary: tether, CLIBinary: cli, CLIVersion: claudetest.DefaultCLIVersion, DebDir: debs,
		Version: "0.1.0", Source: "https://example.invalid/tether", WorkDir: filepath.Join(tmp, "work"),
		Compression: ociimage.Stored, // the contents are under test, not the size
	})
	if err != nil {
		t.Fatal(err)
	}
	done()
	out := filepath.Join(tmp, "layout")
	done = step("write the OCI layout")
	if err := ociimage.WriteLayout(ctx, out, img, "0.1.0"); err != nil {
		t.Fatal(err)
	}
	done()
	if err := ociimage.WriteLayout(ctx, out, img, "0.1.0"); !errors.Is(err, ociimage.ErrOptions) {
		t.Errorf("a second WriteLayout into the same folder: %v, want ErrOptions", err)
	}

	// Read it back as a consumer would.
	idx, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("the layout holds %d manifests, want 1", len(im.Manifests))
	}
	desc := im.Manifests[0]
	if desc.MediaType != types.OCIManifestSchema1 || desc.Annotations["org.opencontainers.image.ref.name"] != "0.1.0" {
		t.Errorf("manifest descriptor: %s %v", desc.MediaType, desc.Annotations)
	}
	got, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := got.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, cf)
	layers, err := got.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 3 {
		t.Errorf("%d layers, want 3 (base, tether, claude)", len(layers))
	}
	for i, l := range layers {
		if mt, _ := l.MediaType(); mt != types.OCILayer {
			t.Errorf("layer %d: media type %s, want %s", i, mt, types.OCILayer)
		}
	}

	rootfs := filepath.Join(tmp, "rootfs")
	done = step("extract the flattened file system")
	files := extract(t, got, rootfs)
	done()
	checkFiles(t, files, rootfs, cli)
	t.Run("bwrap", func(t *testing.T) { runInRootfs(t, ctx, rootfs) })
}

// budget is the context of TestImage's work, ending a little before the
// test's own deadline (go test -timeout; scripts/test.sh gives 30m) so
// that a step cut short fails with its name and the time it had, rather
// than the whole binary panicking. The work is fixed (a static build of
// tether, ~240 MB of CLI written into a layer, hashed and read back, a
// turn through the real CLI in the rootfs) but its time is not: about 20
// seconds on a quiet machine under -race (with gzip.BestSpeed, whose
// compression -race instruments too, it was three minutes), many more on
// one whose cores are busy. A fixed cap measured the machine,
// not the image. Without a deadline (-timeout 0) the work is unbounded, as
// asked.
func budget(t *testing.T) context.Context {
	ctx := t.Context()
	d, ok := t.Deadline()
	if !ok {
		return ctx
	}
	margin := min(max(time.Until(d)/20, 5*time.Second), 30*time.Second)
	ctx, cancel := context.WithDeadline(ctx, d.Add(-margin))
	t.Cleanup(cancel)
	return ctx
}

// stepper logs each step of the test with how long it took; a step that
// runs out of budget says so by name, with the time spent and the time
// it had.
func stepper(t *testing.T, ctx context.Context) func(name string) (done func()) {
	return func(name string) func() {
		start := time.Now()
		left := "unbounded"
		if d, ok := ctx.Deadline(); ok {
			left = time.Until(d).Round(time.Second).String()
		}
		t.Cleanup(func() {
			if ctx.Err() != nil && !start.IsZero() {
				t.Logf("step %q ran %v of the %s it had: %v", name, time.Since(start).Round(time.Second), left, ctx.Err())
			}
		})
		return func() {
			t.Logf("%s: %v", name, time.Since(start).Round(100*time.Millisecond))
			start = time.Time{}
		}
	}
}

func checkConfig(t *testing.T, cf *v1.ConfigFile) {
	t.Helper()
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/tether"}) || !slices.Equal(c.Cmd, []string{"agent"}) {
		t.Errorf("Entrypoint %q Cmd %q, want [/usr/local/bin/tether] [agent]", c.Entrypoint, c.Cmd)
	}
	if c.User != "10001:10001" {
		t.Errorf("User %q, want 10001:10001", c.User)
	}
	for _, e := range []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/tether"} {
		if !slices.Contains(c.Env, e) {
			t.Errorf("Env %q lacks %s", c.Env, e)
		}
	}
	if c.WorkingDir != "/work" {
		t.Errorf("WorkingDir %q, want /work", c.WorkingDir)
	}
	for _, p := range []string{"7878/tcp", "9464/tcp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("ExposedPorts %v lacks %s", c.ExposedPorts, p)
		}
	}
	if c.Labels["org.opencontainers.image.version"] != "0.1.0" || c.Labels["org.opencontainers.image.source"] != "https://example.invalid/tether" {
		t.Errorf("labels %v", c.Labels)
	}
	if cf.Created.Time.Unix() != 0 {
		t.Errorf("created %v, want the epoch (reproducible)", cf.Created)
	}
}

type entry struct {
	hdr  *tar.Header
	body []byte // small files only
}

// extract writes the flattened file system into dir (ownership aside) and
// returns its entries by path.
func extract(t *testing.T, img v1.Image, dir string) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]entry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.Trim(path.Clean("/"+h.Name), "/")
		if name == "" {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		e := entry{hdr: h}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, os.FileMode(h.Mode&0o777)|0o700); err != nil {
				t.Fatal(err)
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, dst); err != nil {
				t.Fatal(err)
			}
		case tar.TypeLink:
			if err := os.Link(filepath.Join(dir, filepath.FromSlash(h.Linkname)), dst); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode&0o777))
			if err != nil {
				t.Fatal(err)
			}
			var small bytes.Buffer
			w := io.Writer(f)
			if h.Size < 1<<20 {
				w = io.MultiWriter(f, &small)
			}
			if _, err := io.Copy(w, tr); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			e.body = small.Bytes()
		}
		files[name] = e
	}
	// Mount points a container runtime makes; bubblewrap needs them there.
	for _, d := range []string{"proc", "dev"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func checkFiles(t *testing.T, files map[string]entry, rootfs, cli string) {
	t.Helper()
	exe := func(name string) {
		t.Helper()
		e, ok := files[name]
		if !ok || e.hdr.Typeflag != tar.TypeReg || e.hdr.Mode&0o111 == 0 {
			t.Errorf("%s: not an executable file in the image", name)
		}
	}
	exe("usr/local/bin/tether")
	exe("usr/local/bin/claude")
	exe("bin/bash")
	exe("bin/ls")
	if st, err := os.Stat(cli); err == nil && files["usr/local/bin/claude"].hdr != nil && files["usr/local/bin/claude"].hdr.Size != st.Size() {
		t.Errorf("usr/local/bin/claude is %d bytes, the CLI %d", files["usr/local/bin/claude"].hdr.Size, st.Size())
	}

	// The CLI's loader and every library it links, as the kernel and the
	// loader will look for them.
	f, err := elf.Open(cli)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, _ := io.ReadAll(p.Open())
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		t.Fatal("the CLI has no PT_INTERP: not the glibc binary this test expects")
	}
	if _, err := os.Stat(filepath.Join(rootfs, resolve(t, rootfs, interp))); err != nil {
		t.Errorf("the CLI's loader %s: %v", interp, err)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range libs {
		found := false
		for _, d := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"} {
			if _, err := os.Stat(filepath.Join(rootfs, resolve(t, rootfs, d+"/"+lib))); err == nil {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("the CLI links %s, which is not in the image", lib)
		}
	}

	ca := files["etc/ssl/certs/ca-certificates.crt"]
	if n := bytes.Count(ca.body, []byte("-----BEGIN CERTIFICATE-----")); n < 50 {
		t.Errorf("etc/ssl/certs/ca-certificates.crt holds %d certificates, want the Mozilla bundle (100+)", n)
	}
	if !bytes.Contains(files["etc/passwd"].body, []byte("\ntether:x:10001:10001:Tether:/home/tether:/bin/bash\n")) {
		t.Errorf("etc/passwd lacks the tether user:\n%s", files["etc/passwd"].body)
	}
	if !bytes.Contains(files["etc/group"].body, []byte("\ntether:x:10001:\n")) {
		t.Errorf("etc/group lacks the tether group:\n%s", files["etc/group"].body)
	}
	for _, d := range []string{"home/tether", "work"} {
		if h := files[d].hdr; h == nil || h.Typeflag != tar.TypeDir || h.Uid != 10001 || h.Gid != 10001 {
			t.Errorf("%s: not a folder owned by 10001:10001 (%+v)", d, h)
		}
	}
	if h := files["tmp"].hdr; h == nil || h.Mode&0o1777 != 0o1777 {
		t.Errorf("tmp: not a sticky world-writable folder (%+v)", h)
	}
	for name := range files {
		if strings.HasPrefix(name, "usr/share/doc/") || strings.HasPrefix(name, "usr/share/man/") {
			t.Errorf("%s: documentation in the image", name)
			break
		}
	}
}

// resolve follows symbolic links of p inside rootfs (absolute targets are
// rootfs-relative), returning a rootfs-relative path.
func resolve(t *testing.T, rootfs, p string) string {
	t.Helper()
	for range 16 {
		fi, err := os.Lstat(filepath.Join(rootfs, p))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return p
		}
		target, err := os.Readlink(filepath.Join(rootfs, p))
		if err != nil {
			return p
		}
		if path.IsAbs(target) {
			p = target
		} else {
			p = path.Join(path.Dir(p), target)
		}
	}
	return p
}

// runInRootfs runs the image's tether and CLI with the flattened file
// system as / under bubblewrap, as the image's user, with its environment:
// `claude --version`, `tether --version`, and `tether doctor`, whose
// offline run takes one turn through the real CLI against a fake Messages
// API on loopback. A bubblewrap that cannot make namespaces here (some
// container sandboxes forbid them) skips this part, even under CI=true:
// it says nothing about the image; TETHER_REQUIRE_BWRAP=1 makes it fail.
func runInRootfs(t *testing.T, ctx context.Context, rootfs string) {
	bwrap, err := exec.LookPath("bwrap")
	need(t, "bubblewrap", err)
	if out, err := exec.CommandContext(ctx, bwrap, "--ro-bind", "/", "/", "--unshare-user", "--", "/bin/true").CombinedOutput(); err != nil {
		msg := "bubblewrap cannot make namespaces in this sandbox: " + err.Error() + ": " + string(out)
		if os.Getenv("TETHER_REQUIRE_BWRAP") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	run := func(args ...string) string {
		t.Helper()
		base := []string{
			"--ro-bind", rootfs, "/", "--proc", "/proc", "--dev", "/dev",
			"--tmpfs", "/tmp", "--tmpfs", "/home/tether", "--tmpfs", "/work",
			"--unshare-user", "--uid", "10001", "--gid", "10001",
			"--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/home/tether",
			"--chdir", "/work", "--die-with-parent", "--",
		}
		cmd := exec.CommandContext(ctx, bwrap, append(base, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s in the image: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run("/usr/local/bin/claude", "--version"); !strings.HasPrefix(out, claudetest.DefaultCLIVersion+" ") {
		t.Errorf("claude --version in the image: %q", out)
	}
	if out := run("/usr/local/bin/tether", "--version"); !strings.HasPrefix(out, "tether ") {
		t.Errorf("tether --version in the image: %q", out)
	}
	if out := run("/bin/bash", "-c", "id -u; id -un; ls /etc/ssl/certs"); out != "10001\ntether\nca-certificates.crt\n" {
		t.Errorf("the shell in the image: %q", out)
	}
	// The doctor's offline run (a turn through the real CLI) gets what is
	// left of the budget, not its default 90 s.
	args := []string{"/usr/local/bin/tether", "doctor"}
	if d, ok := ctx.Deadline(); ok {
		args = append(args, "--timeout", time.Until(d).Round(time.Second).String())
	}
	out := run(args...)
	if !strings.Contains(out, "[ok  ] CLI: /usr/local/bin/claude") || !strings.Contains(out, "[ok  ] offline run") {
		t.Errorf("tether doctor in the image did not find the CLI or take a turn:\n%s", out)
	}
}
