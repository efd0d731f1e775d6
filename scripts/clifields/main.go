// Command clifields runs a Claude Code CLI on the fake Messages API for
// one short session and reports the JSON fields the CLI really writes that
// Tether's Go types do not know: in its answer to initialize, in
// system/init, in the turn's result, in the first message of each other
// kind Tether types (the assistant's, the user message carrying a tool's
// result, a stream event…), and any message type or system subtype
// Tether decodes as unknown. scripts/adopt-cli.sh runs it on a new
// release; its output is a markdown list, empty sections left out.
//
//	go run ./scripts/clifields -cli PATH [-baseline PATH] [-repo DIR]
//
// With -baseline (the newest pinned CLI), the same session runs on it too
// and the report splits what is unknown into what the new CLI added and
// what both write (Tether's known debt, kept raw).
// Go types' JSON names are read from the source (internal/parity's
// reader, which also sees the names a type's JSON methods write), so run
// it from the repository, or give -repo. It exits 1 when it finds
// anything new, 2 when the session cannot run.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/parity"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("clifields", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cli := fs.String("cli", "", "the CLI binary to run (default: claudetest.FindCLI, $TETHER_CLI_VERSION)")
	repo := fs.String("repo", ".", "the repository, whose claude package holds the Go types")
	baseline := fs.String("baseline", "", "a CLI to compare with (the newest pinned): report what is new against it")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long each session may take")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	path := *cli
	if path == "" {
		p, err := claudetest.FindCLI("")
		if err != nil {
			fmt.Fprintln(stderr, "clifields:", err)
			return 2
		}
		path = p
	}
	known := &parity.GoShapes{}
	if err := parity.ReadGoShapes(filepath.Join(*repo, "claude"), "", known); err != nil {
		fmt.Fprintln(stderr, "clifields: reading the Go types:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rec, err := record(ctx, path)
	if err != nil {
		fmt.Fprintln(stderr, "clifields:", err)
		return 2
	}
	var base *recording
	if *baseline != "" {
		if base, err = record(ctx, *baseline); err != nil {
			fmt.Fprintln(stderr, "clifields: the baseline:", err)
			return 2
		}
	}
	return report(stdout, rec, base, known)
}

// recording is what one session wrote.
type recording struct {
	version    string
	initialize json.RawMessage
	lines      []claude.Message
}

// record runs one session: a Bash call the rules allow, then an answer,
// in a throw-away HOME with nothing of the caller's environment but PATH.
func record(ctx context.Context, path string) (*recording, error) {
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_fields", "Bash", map[string]string{"command": "echo fields"}),
		claudetest.TextReply("fields: done"),
	}})
	defer api.Close()
	home, err := os.MkdirTemp("", "tether-clifields-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	env := api.CLIEnv(home)
	env["PATH"] = os.Getenv("PATH")
	s, err := claude.Connect(ctx, &claude.Options{CLIPath: path, Cwd: home, Env: env, EnvOnly: true,
		AllowedTools: []string{"Bash(echo *)"}, SkipVersionCheck: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rec := &recording{initialize: s.Initialize().Raw}
	if err := s.Send(ctx, "show your fields"); err != nil {
		return nil, err
	}
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			if _, isResult := m.(*claude.ResultMessage); !isResult {
				return nil, err
			}
		}
		if m != nil {
			rec.lines = append(rec.lines, m)
		}
		if im, ok := m.(*claude.InitMessage); ok {
			rec.version = im.ClaudeCodeVersion
		}
	}
	return rec, nil
}

// always are the keys no Go field needs to carry: the discriminants.
var always = []string{"type", "subtype"}

// unknownKeys returns the keys of the JSON object raw that goType has no
// JSON name for, each with a short sample of its value, in key order.
func unknownKeys(raw json.RawMessage, goType string, known *parity.GoShapes) [][2]string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	names := known.JSON[goType]
	var out [][2]string
	for k, v := range obj {
		if names[k] || slices.Contains(always, k) {
			continue
		}
		sample := string(v)
		if len(sample) > 60 {
			sample = sample[:57] + "..."
		}
		out = append(out, [2]string{k, sample})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// finding is one unknown thing a session showed: where, and what.
type finding struct {
	where, key, sample string
}

// findings lists what rec shows that the Go types lack, in order.
func findings(rec *recording, known *parity.GoShapes) []finding {
	var out []finding
	add := func(where string, raw json.RawMessage, goType string) {
		for _, k := range unknownKeys(raw, goType, known) {
			out = append(out, finding{where, k[0], k[1]})
		}
	}
	add("the answer to `initialize` (`InitializeResponse`)", rec.initialize, "InitializeResponse")
	seen := map[string]bool{}
	for _, m := range rec.lines {
		switch m := m.(type) {
		case *claude.InitMessage:
			if !seen["init"] {
				seen["init"] = true
				add("`system/init` (`InitMessage`)", m.RawJSON(), "InitMessage")
			}
		case *claude.ResultMessage:
			if !seen["result"] {
				seen["result"] = true
				add("the turn's `result` (`ResultMessage`)", m.RawJSON(), "ResultMessage")
			}
		case *claude.UnknownSystemMessage:
			if !seen["system/"+m.Subtype] {
				seen["system/"+m.Subtype] = true
				out = append(out, finding{"system subtypes Tether does not know", m.Subtype, ""})
			}
		case *claude.UnknownMessage:
			if !seen[m.Type] {
				seen[m.Type] = true
				out = append(out, finding{"message types Tether does not know", m.Type, ""})
			}
		default:
			// Every other message Tether types (the assistant's, the
			// tool results' user message, a stream event, another
			// system subtype): its first line of each kind.
			goType := reflect.TypeOf(m).Elem().Name()
			if known.JSON[goType] == nil {
				continue // a type whose JSON the source reader cannot see
			}
			kind := wireKind(m.RawJSON())
			if !seen[kind] {
				seen[kind] = true
				add(fmt.Sprintf("`%s` (`%s`)", kind, goType), m.RawJSON(), goType)
			}
		}
	}
	return out
}

// wireKind is a line's "type", or "type/subtype" when it has a subtype.
func wireKind(raw json.RawMessage) string {
	var k struct{ Type, Subtype string }
	_ = json.Unmarshal(raw, &k)
	if k.Subtype != "" {
		return k.Type + "/" + k.Subtype
	}
	return k.Type
}

// report prints the findings of rec, split by base when there is one,
// and returns 1 when rec shows anything base does not (or anything at
// all, without base).
func report(w io.Writer, rec, base *recording, known *parity.GoShapes) int {
	all := findings(rec, known)
	old := map[finding]bool{}
	if base != nil {
		for _, f := range findings(base, known) {
			old[finding{f.where, f.key, ""}] = true
		}
	}
	var fresh, both []finding
	for _, f := range all {
		if old[finding{f.where, f.key, ""}] {
			both = append(both, f)
		} else {
			fresh = append(fresh, f)
		}
	}
	list := func(fs []finding, samples bool) {
		var order []string
		by := map[string][]string{}
		for _, f := range fs {
			if _, ok := by[f.where]; !ok {
				order = append(order, f.where)
			}
			item := "`" + f.key + "`"
			if samples && f.sample != "" {
				item += " (e.g. `" + f.sample + "`)"
			}
			by[f.where] = append(by[f.where], item)
		}
		for _, where := range order {
			fmt.Fprintf(w, "* %s: %s\n", where, strings.Join(by[where], ", "))
		}
		if len(fs) == 0 {
			fmt.Fprintln(w, "* none")
		}
	}
	if base == nil {
		fmt.Fprintf(w, "Fields CLI %s writes that Tether's types lack (one offline session: initialize, a Bash call, an answer):\n\n", rec.version)
		list(all, true)
		return min(len(all), 1)
	}
	fmt.Fprintf(w, "New in what CLI %s writes, against %s, that Tether's types lack (one offline session on each: initialize, a Bash call, an answer):\n\n", rec.version, base.version)
	list(fresh, true)
	fmt.Fprintf(w, "\nWritten by both and not typed (kept in the messages' raw JSON):\n\n")
	list(both, false)
	return min(len(fresh), 1)
}
