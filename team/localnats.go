package team

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// LocalNATS says how to reach the JetStream server tether serve runs for
// a team on one machine (its shares, spend, sign-ins and audit log), so
// that tether audit on the same machine finds it. It is written to
// LocalNATSFile in the team's state folder, readable by its owner only:
// whoever can read it can read the audit log.
type LocalNATS struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// LocalNATSFile is the file name of LocalNATS in the state folder.
const LocalNATSFile = "nats.json"

// WriteLocalNATS writes n to dir/LocalNATSFile with mode 0600.
func WriteLocalNATS(dir string, n *LocalNATS) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".nats-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, LocalNATSFile))
}

// ReadLocalNATS reads what WriteLocalNATS wrote in dir.
func ReadLocalNATS(dir string) (*LocalNATS, error) {
	b, err := os.ReadFile(filepath.Join(dir, LocalNATSFile))
	if err != nil {
		return nil, fmt.Errorf("team: no local JetStream in %s (is tether serve --team running with this state folder?): %w", dir, err)
	}
	var n LocalNATS
	if err := json.Unmarshal(b, &n); err != nil || n.URL == "" {
		return nil, fmt.Errorf("team: %s is not a local JetStream description", filepath.Join(dir, LocalNATSFile))
	}
	return &n, nil
}
