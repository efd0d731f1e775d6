package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoDeb is matched by a *DebError: a package's .deb is missing from the
// cache folder, or apt-get or dpkg-deb failed on it.
var ErrNoDeb = errors.New("ociimage: Debian package not available")

// DebError says which package could not be fetched or read, and why.
type DebError struct {
	Package string
	Err     error
}

func (e *DebError) Error() string {
	return fmt.Sprintf("ociimage: Debian package %s: %v", e.Package, e.Err)
}

func (e *DebError) Unwrap() []error { return []error{ErrNoDeb, e.Err} }

// FetchDebs makes sure dir holds a .deb of each package, downloading the
// missing ones with `apt-get download` (the machine's apt sources, which
// must be Debian 12 or a release with the same glibc the CLI needs; run
// apt-get update first on a fresh machine). Packages already in dir are
// not downloaded again, so the cache pins them until it is emptied.
// It returns the .deb files in the order of pkgs.
func FetchDebs(ctx context.Context, dir string, pkgs []string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var missing []string
	for _, p := range pkgs {
		if _, err := findDeb(dir, p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		if _, err := exec.LookPath("apt-get"); err != nil {
			return nil, &DebError{Package: strings.Join(missing, " "), Err: fmt.Errorf("not in %s, and no apt-get to download it: %w", dir, err)}
		}
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"download", "-q"}, missing...)...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return nil, &DebError{Package: strings.Join(missing, " "),
				Err: fmt.Errorf("apt-get download: %v (on a fresh machine, run apt-get update first): %s", err, lastLines(out.String(), 5))}
		}
	}
	debs := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		d, err := findDeb(dir, p)
		if err != nil {
			return nil, err
		}
		debs = append(debs, d)
	}
	return debs, nil
}

// findDeb finds pkg's .deb in dir: pkg_VERSION_ARCH.deb, for this machine's
// architecture or all. Several versions are an error, not a guess.
func findDeb(dir, pkg string) (string, error) {
	var found []string
	for _, arch := range []string{"amd64", "all"} {
		m, err := filepath.Glob(filepath.Join(dir, pkg+"_*_"+arch+".deb"))
		if err != nil {
			return "", &DebError{Package: pkg, Err: err}
		}
		found = append(found, m...)
	}
	switch len(found) {
	case 0:
		return "", &DebError{Package: pkg, Err: fmt.Errorf("no %s_*.deb in %s", pkg, dir)}
	case 1:
		return found[0], nil
	default:
		return "", &DebError{Package: pkg, Err: fmt.Errorf("several versions in %s: %s; remove all but one", dir, strings.Join(found, ", "))}
	}
}

// skipped are the parts of a package an image does not need.
var skipped = []string{"usr/share/doc/", "usr/share/man/", "usr/share/info/", "usr/share/locale/", "usr/share/lintian/", "usr/share/bug/"}

// caCert is one certificate ca-certificates ships.
type caCert struct {
	name string
	pem  []byte
}

// copyDeb copies a package's files into the layer, reading its file system
// tar from dpkg-deb (which handles every compression a .deb may use). The
// certificates of usr/share/ca-certificates are collected into certs too.
func copyDeb(ctx context.Context, w *tarWriter, deb string, certs *[]caCert) error {
	pkg := strings.SplitN(filepath.Base(deb), "_", 2)[0]
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return &DebError{Package: pkg, Err: fmt.Errorf("dpkg-deb: %w", err)}
	}
	copyErr := copyTar(w, tar.NewReader(out), certs)
	if copyErr != nil {
		// Unblock dpkg-deb, which may be writing still.
		_, _ = io.Copy(io.Discard, out)
	}
	waitErr := cmd.Wait()
	if copyErr != nil {
		return &DebError{Package: pkg, Err: copyErr}
	}
	if waitErr != nil {
		return &DebError{Package: pkg, Err: fmt.Errorf("dpkg-deb: %v: %s", waitErr, lastLines(stderr.String(), 3))}
	}
	return nil
}

func copyTar(w *tarWriter, tr *tar.Reader, certs *[]caCert) error {
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(h.Name, "./")
		if skip(name) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeReg, tar.TypeSymlink, tar.TypeLink:
		default:
			continue // no devices or fifos in packages worth having
		}
		hdr := &tar.Header{Name: name, Typeflag: h.Typeflag, Mode: h.Mode, Size: h.Size, Linkname: h.Linkname}
		if h.Typeflag == tar.TypeLink {
			hdr.Linkname = strings.Trim(filepath.Clean("/"+strings.TrimPrefix(h.Linkname, "./")), "/")
		}
		if h.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if err := w.header(hdr); err == errSkip {
			continue
		} else if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		var dst io.Writer = w.tw
		var pem bytes.Buffer
		if strings.HasPrefix(name, "usr/share/ca-certificates/") && strings.HasSuffix(name, ".crt") {
			dst = io.MultiWriter(w.tw, &pem)
		}
		if _, err := io.Copy(dst, tr); err != nil {
			return err
		}
		if pem.Len() > 0 {
			*certs = append(*certs, caCert{name: name, pem: pem.Bytes()})
		}
	}
}

func skip(name string) bool {
	for _, s := range skipped {
		if strings.HasPrefix(name, s) || name+"/" == s {
			return true
		}
	}
	return false
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
