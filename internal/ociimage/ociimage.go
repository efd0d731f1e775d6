// Package ociimage builds Tether's container image without a container
// runtime or daemon: three layers written as tar files and assembled with
// go-containerregistry into an OCI image layout (a folder that skopeo, crane,
// podman, containerd and registries' own tools can load or push).
//
// The layers, bottom to top:
//
//  1. a minimal base made from Debian packages: glibc (the Claude Code CLI
//     is a glibc binary: it links libc, libm, libpthread, libdl, librt and
//     the loader), a shell and coreutils for the CLI's Bash tool, the CA
//     bundle, /etc/passwd and /etc/group with the non-root user tether
//     (10001), /tmp, the home and workspaces folders;
//  2. the static tether binary at /usr/local/bin/tether;
//  3. the pinned CLI at /usr/local/bin/claude.
//
// The CLI changes least often after the base, but it is by far the biggest
// layer (~240 MB); keeping tether on its own layer makes a Tether-only
// upgrade pull a few MB.
//
// Every file's owner, group and time are fixed (root, or tether for the
// folders it writes; Options.Created for times), so that the same inputs
// give the same layer digests and a registry stores an unchanged layer
// once.
package ociimage

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed layout. Manifests, units and docs (deploy/, docs/
// operations.md) name these paths; the tests check them.
const (
	UID          = 10001
	GID          = 10001
	User         = "tether"
	Home         = "/home/tether"
	Workspaces   = "/work"
	TetherPath   = "/usr/local/bin/tether"
	CLIPath      = "/usr/local/bin/claude"
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// ServePort and AgentHTTPPort are the ports the image exposes: tether
	// serve's HTTP and the agent's --http-addr (metrics and probes).
	ServePort     = 7878
	AgentHTTPPort = 9464
	// Path is the image's PATH.
	Path = "/usr/local/bin:/usr/bin:/bin"
)

// DefaultPackages are the Debian packages of the base layer: glibc for the
// CLI, CA certificates for its HTTPS, and bash with coreutils (and their
// libraries) so that the CLI's Bash tool has a shell and the usual
// commands. Add git, ripgrep or a language toolchain with Options.Packages
// for sessions that need them; dependencies are not resolved for you.
var DefaultPackages = []string{
	"libc6", "ca-certificates",
	"bash", "libtinfo6",
	"coreutils", "libacl1", "libattr1", "libgmp10", "libselinux1", "libpcre2-8-0",
}

// Options says what goes into the image. TetherBinary, CLIBinary and DebDir
// are required; the rest have defaults.
type Options struct {
	// TetherBinary is a static (CGO_ENABLED=0) tether executable for the
	// image's platform.
	TetherBinary string
	// CLIBinary is the Claude Code CLI's native executable (the target of
	// node_modules/.bin/claude; symbolic links are followed).
	CLIBinary string
	// CLIVersion is the CLI's version, for a label; "" leaves it out.
	CLIVersion string
	// DebDir holds the .deb files of Packages (FetchDebs fills it).
	DebDir string
	// Packages are the Debian packages of the base; nil means
	// DefaultPackages.
	Packages []string
	// Version is Tether's version, for the org.opencontainers.image.version
	// label; "" leaves it out.
	Version string
	// Source is the source repository's address, for the
	// org.opencontainers.image.source label; "" leaves it out.
	Source string
	// Created is every file's time and the image's creation time; the zero
	// value means the Unix epoch, for reproducible digests.
	Created time.Time
	// WorkDir holds the layer files while the image is assembled, and must
	// live until the image is written (it is made if missing); "" means a
	// new folder under os.TempDir. The caller removes it (Image.WorkDir).
	WorkDir string
	// Compression is the layers' gzip level (compress/gzip's
	// gzip.HuffmanOnly to gzip.BestCompression, or Stored); 0 means
	// gzip.DefaultCompression. Most of a build's time is gzipping the
	// CLI (~240 MB): a test that checks the image's contents, not its
	// size, asks for Stored. Digests depend on the level.
	Compression int
}

// Stored is the Compression that writes the layers as gzip streams of
// stored (uncompressed) blocks, compress/gzip's NoCompression, which
// Options cannot name as 0 (that is the default). Building and reading
// back cost little more than copying, the layers are as large as their
// tar files, and every gzip reader reads them.
const Stored = -3

// ErrOptions is matched by the errors of invalid Options.
var ErrOptions = errors.New("ociimage: invalid options")

// Image is a built image and the folder its layer files are in.
type Image struct {
	v1.Image
	// WorkDir holds the layers' files; remove it once the image is written.
	WorkDir string
}

// Build assembles the image. The layers are gzipped tar files in
// o.WorkDir, read again when the image is written.
func Build(ctx context.Context, o *Options) (*Image, error) {
	if o == nil || o.TetherBinary == "" || o.CLIBinary == "" || o.DebDir == "" {
		return nil, fmt.Errorf("%w: TetherBinary, CLIBinary and DebDir are required", ErrOptions)
	}
	pkgs := o.Packages
	if pkgs == nil {
		pkgs = DefaultPackages
	}
	created := o.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC()
	work := o.WorkDir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "tether-image-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	cli, err := filepath.EvalSymlinks(o.CLIBinary)
	if err != nil {
		return nil, fmt.Errorf("%w: the CLI: %v", ErrOptions, err)
	}

	level := o.Compression
	switch level {
	case 0:
		level = gzip.DefaultCompression
	case Stored:
		level = gzip.NoCompression
	}
	if level < gzip.HuffmanOnly || level > gzip.BestCompression {
		return nil, fmt.Errorf("%w: Compression %d is not a gzip level", ErrOptions, o.Compression)
	}
	b := &layerBuilder{mtime: created, level: level}
	base, err := b.write(ctx, filepath.Join(work, "base.tar.gz"), func(w *tarWriter) error {
		return writeBase(ctx, w, o.DebDir, pkgs)
	})
	if err != nil {
		return nil, fmt.Errorf("ociimage: the base layer: %w", err)
	}
	tether, err := b.write(ctx, filepath.Join(work, "tether.tar.gz"), func(w *tarWriter) error {
		w.dirs("/usr/local/bin")
		return w.file(TetherPath, o.TetherBinary, 0o755)
	})
	if err != nil {
		return nil, fmt.Errorf("ociimage: the tether layer: %w", err)
	}
	claude, err := b.write(ctx, filepath.Join(work, "claude.tar.gz"), func(w *tarWriter) error {
		w.dirs("/usr/local/bin")
		return w.file(CLIPath, cli, 0o755)
	})
	if err != nil {
		return nil, fmt.Errorf("ociimage: the CLI layer: %w", err)
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, l := range []struct{ path, what string }{{base, "base"}, {tether, "tether"}, {claude, "claude"}} {
		layer, err := tarball.LayerFromFile(l.path, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, err
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:     layer,
			History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: "ociimage: " + l.what, Comment: l.what},
			MediaType: types.OCILayer,
		})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: created}
	cf.Config = Config(o)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return &Image{Image: img, WorkDir: work}, nil
}

// Config is the image's run configuration: tether as the entrypoint, the
// agent by default, the non-root user, and the ports of serve and of the
// agent's metrics and probes.
func Config(o *Options) v1.Config {
	labels := map[string]string{
		"org.opencontainers.image.title":       "tether",
		"org.opencontainers.image.description": "Tether: Claude Code sessions for browsers and clusters (tether serve, tether agent)",
	}
	if o.Version != "" {
		labels["org.opencontainers.image.version"] = o.Version
	}
	if o.Source != "" {
		labels["org.opencontainers.image.source"] = o.Source
	}
	if o.CLIVersion != "" {
		labels["dev.tether.claude-code.version"] = o.CLIVersion
	}
	return v1.Config{
		Entrypoint: []string{TetherPath},
		Cmd:        []string{"agent"},
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Env:        []string{"PATH=" + Path, "HOME=" + Home, "SSL_CERT_FILE=" + CABundlePath},
		WorkingDir: Workspaces,
		ExposedPorts: map[string]struct{}{
			fmt.Sprintf("%d/tcp", ServePort):     {},
			fmt.Sprintf("%d/tcp", AgentHTTPPort): {},
		},
		Labels:     labels,
		StopSignal: "SIGTERM",
	}
}

// WriteLayout writes img as the only image of a new OCI image layout in dir
// (which must not hold one already), tagged with ref in the
// org.opencontainers.image.ref.name annotation when ref is not empty.
func WriteLayout(ctx context.Context, dir string, img v1.Image, ref string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
		return fmt.Errorf("%w: %s already holds an image layout", ErrOptions, dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if ref != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
	}
	return p.AppendImage(img, opts...)
}

// layerBuilder writes layers as gzipped tar files with fixed times.
type layerBuilder struct {
	mtime time.Time
	level int // gzip
}

func (b *layerBuilder) write(ctx context.Context, path string, fill func(*tarWriter) error) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	gz, err := gzip.NewWriterLevel(f, b.level)
	if err != nil {
		return "", err
	}
	w := &tarWriter{ctx: ctx, tw: tar.NewWriter(gz), mtime: b.mtime, seen: map[string]byte{}}
	if err := fill(w); err != nil {
		return "", err
	}
	if err := w.tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	return path, f.Close()
}

// tarWriter writes a layer's entries: names without the leading slash,
// root-owned unless said otherwise, each path once (a folder several
// packages hold is written by the first).
type tarWriter struct {
	ctx   context.Context
	tw    *tar.Writer
	mtime time.Time
	seen  map[string]byte // path → tar type flag
}

func (w *tarWriter) header(h *tar.Header) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	name := strings.Trim(filepath.Clean("/"+h.Name), "/")
	if name == "" {
		return nil
	}
	if t, ok := w.seen[name]; ok {
		if t == tar.TypeDir && h.Typeflag == tar.TypeDir {
			return errSkip
		}
		return fmt.Errorf("%s: in the layer twice", name)
	}
	w.seen[name] = h.Typeflag
	h.Name = name
	if h.Typeflag == tar.TypeDir {
		h.Name += "/"
	}
	h.ModTime, h.AccessTime, h.ChangeTime = w.mtime, time.Time{}, time.Time{}
	h.Format = tar.FormatPAX
	if h.Uname == "" {
		h.Uname, h.Gname = "root", "root"
	}
	return w.tw.WriteHeader(h)
}

// errSkip says a header was not written (a folder already there): the
// caller must not write its content.
var errSkip = errors.New("skip")

// dirs writes each folder of each path (and the path itself), root-owned,
// 0755.
func (w *tarWriter) dirs(paths ...string) {
	for _, p := range paths {
		parts := strings.Split(strings.Trim(p, "/"), "/")
		for i := range parts {
			d := strings.Join(parts[:i+1], "/")
			if _, ok := w.seen[d]; ok {
				continue
			}
			// Errors are the writer's, and come back from the next file.
			_ = w.header(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
		}
	}
}

func (w *tarWriter) ownedDir(p string, mode int64, uid, gid int, user string) error {
	w.dirs(filepath.Dir(p))
	return w.header(&tar.Header{Name: p, Typeflag: tar.TypeDir, Mode: mode, Uid: uid, Gid: gid, Uname: user, Gname: user})
}

func (w *tarWriter) bytes(p string, b []byte, mode int64) error {
	w.dirs(filepath.Dir(p))
	if err := w.header(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(b))}); err != nil {
		return err
	}
	_, err := w.tw.Write(b)
	return err
}

func (w *tarWriter) file(p, src string, mode int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", src)
	}
	if err := w.header(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: mode, Size: st.Size()}); err != nil {
		return err
	}
	_, err = io.Copy(w.tw, &ctxReader{ctx: w.ctx, r: f})
	return err
}

// ctxReader stops a long copy (the CLI is ~240 MB) when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// writeBase writes the base layer: the packages' files (without their
// documentation), the CA bundle made from the certificates
// ca-certificates ships (its maintainer script, which would make it, does
// not run here), the users, and the folders tether writes.
func writeBase(ctx context.Context, w *tarWriter, debDir string, pkgs []string) error {
	var certs []caCert
	for _, pkg := range pkgs {
		deb, err := findDeb(debDir, pkg)
		if err != nil {
			return err
		}
		if err := copyDeb(ctx, w, deb, &certs); err != nil {
			return err
		}
	}
	if len(certs) == 0 {
		return fmt.Errorf("%w: no CA certificates in the packages (ca-certificates missing?)", ErrOptions)
	}
	sort.Slice(certs, func(i, j int) bool { return certs[i].name < certs[j].name })
	var bundle []byte
	for _, c := range certs {
		bundle = append(bundle, c.pem...)
		if len(c.pem) > 0 && c.pem[len(c.pem)-1] != '\n' {
			bundle = append(bundle, '\n')
		}
	}
	if err := w.bytes(CABundlePath, bundle, 0o644); err != nil {
		return err
	}
	files := []struct {
		path, body string
	}{
		{"/etc/passwd", fmt.Sprintf("root:x:0:0:root:/root:/bin/bash\n%s:x:%d:%d:Tether:%s:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", User, UID, GID, Home)},
		{"/etc/group", fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", User, GID)},
		{"/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n"},
		{"/etc/os-release", "NAME=\"tether\"\nID=tether\nID_LIKE=debian\n"},
	}
	for _, f := range files {
		if err := w.bytes(f.path, []byte(f.body), 0o644); err != nil {
			return err
		}
	}
	if err := w.ownedDir("/tmp", 0o1777, 0, 0, "root"); err != nil && err != errSkip {
		return err
	}
	for _, d := range []string{Home, Workspaces} {
		if err := w.ownedDir(d, 0o755, UID, GID, User); err != nil && err != errSkip {
			return err
		}
	}
	return nil
}
