package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The deploy files (deploy/systemd, deploy/kubernetes) run tether with
// flags: each must be one the command has, so that a renamed flag fails
// here and not on a production host.
func TestDeployFilesUseRealFlags(t *testing.T) {
	flagsOf := map[string]string{}
	for _, sub := range []string{"serve", "agent"} {
		var out, errb bytes.Buffer
		if code := Main(context.Background(), []string{sub, "-h"}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("tether %s -h: exit %d", sub, code)
		}
		flagsOf[sub] = errb.String() + out.String()
	}
	files, _ := filepath.Glob("../../deploy/systemd/*.service")
	yamls, _ := filepath.Glob("../../deploy/kubernetes/*.yaml")
	files = append(files, yamls...)
	if len(files) < 4 {
		t.Fatalf("deploy files: %v", files)
	}
	flagRe := regexp.MustCompile(`(?m)(?:^|\s|- )--([a-z][a-z0-9-]*)`)
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := commandLines(string(data), strings.HasSuffix(f, ".service"))
		sub := ""
		switch {
		case strings.Contains(f, "agent"):
			sub = "agent"
		case strings.Contains(f, "serve"):
			sub = "serve"
		default:
			continue
		}
		for _, m := range flagRe.FindAllStringSubmatch(text, -1) {
			checked++
			if !strings.Contains(flagsOf[sub], "  -"+m[1]+" ") && !strings.Contains(flagsOf[sub], "  -"+m[1]+"\n") {
				t.Errorf("%s: tether %s has no flag --%s", filepath.Base(f), sub, m[1])
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d flags found in the deploy files", checked)
	}
}

// commandLines is the part of a deploy file that is tether's command
// line: a unit's ExecStart (with its continuation lines), a manifest's
// args list items; comments are left out.
func commandLines(text string, unit bool) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") {
			continue
		}
		if unit {
			if strings.HasPrefix(t, "ExecStart=") {
				in = true
			}
			if in {
				b.WriteString(t + "\n")
				in = strings.HasSuffix(t, "\\")
			}
			continue
		}
		if strings.HasPrefix(t, "- --") {
			b.WriteString(t + "\n")
		}
	}
	return b.String()
}
