package team_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/team"
)

// The embedded JetStream stores under the state folder, is reachable
// with the token written to nats.json (0600) and refuses anyone
// without it; Close removes the file and stops the server.
func TestLocalJetStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	l, err := team.StartLocalJetStream(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	kv, err := l.JetStream().CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Fatalf("store folder: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, team.LocalNATSFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("nats.json: %v %v", fi, err)
	}
	ln, err := team.ReadLocalNATS(dir)
	if err != nil || ln.URL != l.URL() || ln.Token == "" {
		t.Fatalf("ReadLocalNATS: %+v %v", ln, err)
	}
	if u := l.URL(); len(u) < 17 || u[:17] != "nats://127.0.0.1:" {
		t.Fatalf("listens on %s, want loopback", u)
	}
	if nc, err := nats.Connect(ln.URL, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("connected without the token")
	}
	nc, err := nats.Connect(ln.URL, nats.Token(ln.Token))
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	nc.Close()
	l.Close()
	if _, err := os.Stat(filepath.Join(dir, team.LocalNATSFile)); !os.IsNotExist(err) {
		t.Fatalf("nats.json after Close: %v", err)
	}
	if _, err := team.StartLocalJetStream(ctx, ""); err == nil {
		t.Fatal("started without a folder")
	}
}
