package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// fill sets every field of v (a pointer) to a value that is not empty,
// recursively, so that its JSON has every field it can have.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(`{"x":1}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(1)
	case reflect.Float64:
		v.SetFloat(1)
	}
}

// Every message revision 1 decodes strictly has its shape here, and the
// fields this release has beyond it are the ones listed: a field added to
// one of these messages shows up in this test, to be added to the list
// (it then reaches only readers of revision 2 and later, see encodeFor)
// and to docs/cluster.md's Compatibility section.
func TestRevision1Shapes(t *testing.T) {
	beyond := map[string][]string{
		// host.Command's close decision for a session in a worktree,
		// and the worktree a command's result reports (a close of a
		// session without one carries neither, and sessions in
		// worktrees run only on agents of revision 4); the files a
		// revert_changes names, and what changes, revert_changes and
		// slash_commands answer (commands an agent of revision 1
		// refuses anyway; changes_as_of only a client sets, from a
		// session's answers record). An elicitation's values (an agent
		// before them declines elicitations unasked: it lists none to
		// answer). The task a stop_task names (a command an agent
		// before it refuses as unsupported).
		"command":       {"confirm", "content", "paths", "task_id", "worktree"},
		"command_reply": {"result.changes", "result.changes_as_of", "result.reverted", "result.slash_commands", "result.worktree"},
		// Revision 4: a start in a worktree (refused unless every live
		// agent speaks 4), and the session's worktree in its record
		// (written only while no reader before revision 3 is about)
		// and in a start's reply; the resume of a session that ended
		// on its own (an older agent refuses it, as it always did).
		// The session a session continues (its history), in its
		// record as the worktree is, and in a start's reply; so is the
		// count of its background tasks.
		"start":       {"continue", "worktree"},
		"start_reply": {"session.from", "session.tasks", "session.worktree"},
		"session":     {"from", "tasks", "worktree"},
	}
	for kind, v := range map[string]any{
		"command": &commandMsg{}, "command_reply": &commandReply{}, "start": &startRequest{}, "start_reply": &startReply{},
		"snapshot": &snapshotMsg{}, "session": &SessionInfo{}, "agent": &agentRecord{},
	} {
		fill(reflect.ValueOf(v))
		_, dropped, err := encodeFor(1, kind, v)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dropped, beyond[kind]) {
			t.Errorf("%s: fields beyond revision 1: %v, listed %v", kind, dropped, beyond[kind])
		}
	}
}

// A field revision 1 does not know is left out for such a reader, and
// said so when it held a value; a reader of revision 2 gets it.
func TestEncodeForRevision1(t *testing.T) {
	type later struct {
		commandMsg
		Display string `json:"display,omitempty"`
		Flag    bool   `json:"flag"`
	}
	v := &later{commandMsg: commandMsg{Command: host.Command{Type: host.CommandSend, Text: "hi",
		Images: []host.Image{{MediaType: "image/png", Data: "aGk="}}}, Identity: &team.Identity{Subject: "a", Role: team.RoleMember}},
		Display: "summarized"}
	data, dropped, err := encodeFor(1, "command", v)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dropped, []string{"display"}) {
		t.Fatalf("dropped %v, want [display] (flag is false: nothing lost)", dropped)
	}
	var back commandMsg
	if err := decode("s", data, MaxCommandSize, &back); err != nil || back.Text != "hi" || back.Identity.Subject != "a" {
		t.Fatalf("projected %s: %v", data, err)
	}
	// What revision 1 would have decoded strictly: no field it does not know.
	var m map[string]json.RawMessage
	json.Unmarshal(data, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want := []string{"identity", "images", "text", "type"}; !slices.Equal(keys, want) {
		t.Fatalf("fields %v, want %v", keys, want)
	}
	data, dropped, _ = encodeFor(2, "command", v)
	if dropped != nil || !strings.Contains(string(data), `"display":"summarized"`) {
		t.Fatalf("revision 2 got %s (dropped %v)", data, dropped)
	}
}

// Decoding follows one rule: unknown fields are ignored; an operation
// this release does not know, or a message lacking what it needs, is an
// *UnsupportedError naming the writer's revision, never ErrMalformed.
func TestDecodeRule(t *testing.T) {
	h := nats.Header{}
	h.Set(hdrWire, "7")
	var c commandMsg
	if err := decodeFrom("s", h, []byte(`{"type":"interrupt","later":{"x":1}}`), MaxCommandSize, &c); err != nil {
		t.Fatalf("an unknown field: %v", err)
	}
	for _, tc := range []struct {
		data string
		v    validator
	}{
		{`{"type":"summon"}`, &commandMsg{}},
		{`{"op":"send","prompt":"2f828d2's shape"}`, &commandMsg{}},
		{`{"id":"abc"}`, &startRequest{}},
		{`{"expires":"2030-01-01T00:00:00Z"}`, &startRequest{}},
	} {
		err := decodeFrom("s", h, []byte(tc.data), MaxCommandSize, tc.v)
		var ue *UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrMalformed) || ue.Revision != 7 ||
			!strings.Contains(err.Error(), "wire revision 7") {
			t.Errorf("%s: %v, want unsupported from revision 7", tc.data, err)
		}
		if w := wireErr(err); w.Code != codeUnsupported || !errors.Is(w.err(), ErrUnsupported) {
			t.Errorf("%s: crosses the bus as %+v", tc.data, w)
		}
	}
	if err := decode("s", []byte(`{"type":"send","text":"x"`), MaxCommandSize, &c); !errors.Is(err, ErrMalformed) {
		t.Errorf("broken JSON: %v", err)
	}
	if wireOf(nil) != 1 || wireOf(nats.Header{}) != 1 {
		t.Error("a message without the header is revision 1's")
	}
}

// A session's registry entry carries its worktree (revision 4) and its
// count of background tasks only while the agent knows of no reader
// before revision 3: revision 1 decodes records strictly. A client rewriting an entry keeps what the
// agent wrote.
func TestSessionRecordWorktree(t *testing.T) {
	r := &SessionInfo{ID: "s1", Agent: "a1", Cwd: "/r/.claude/worktrees/x",
		Worktree: &host.WorktreeInfo{Path: "/r/.claude/worktrees/x", Branch: "tether/x", Base: "main", Repo: "/r", State: host.WorktreeActive}}
	oldReader := true
	agent := &bus{recordWorktree: func() bool { return !oldReader }}
	strict := func(data []byte) error { // as revision 1 decodes: no field it does not know
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		for k := range m {
			if _, ok := wireShapes["session"][k]; !ok {
				return fmt.Errorf("field %q revision 1 does not know", k)
			}
		}
		return nil
	}
	if err := strict(agent.encodeSession(r)); err != nil {
		t.Fatalf("with an older reader about: %v", err)
	}
	oldReader = false
	data := agent.encodeSession(r)
	var back SessionInfo
	if err := decode("s", data, MaxRecordSize, &back); err != nil || back.Worktree == nil || back.Worktree.Branch != "tether/x" {
		t.Fatalf("without: %s, %v", data, err)
	}
	client := &bus{}
	if data := client.encodeSession(&back); !strings.Contains(string(data), `"worktree"`) {
		t.Fatalf("a client's rewrite dropped the worktree: %s", data)
	}
	// A session without a worktree is revision 1's shape whoever writes.
	plain := *r
	plain.Worktree = nil
	if err := strict(client.encodeSession(&plain)); err != nil {
		t.Fatal(err)
	}
	// Its count of background tasks follows the same rule.
	busy := plain
	busy.Tasks = 2
	oldReader = true
	if err := strict(agent.encodeSession(&busy)); err != nil {
		t.Fatalf("tasks with an older reader about: %v", err)
	}
	oldReader = false
	back = SessionInfo{}
	if data := agent.encodeSession(&busy); decode("s", data, MaxRecordSize, &back) != nil || back.Tasks != 2 {
		t.Fatalf("tasks without an older reader: %s", data)
	}
}
