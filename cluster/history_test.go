package cluster_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/team"
)

// A session that continues another over the cluster shows the earlier
// conversation, as on a lone serve: the resume of a session that ended
// (a new session in its place) and a start from a cluster session's
// conversation both carry the history read from the source's mirrored
// transcript, in serve's snapshot too; a new session has none.
func TestResumedSessionHistoryOverTheCluster(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 4)
	c := newClient(t, ns.URL())
	b := cluster.NewBackend(c, nil)
	hi, err := b.Start(ctx, &host.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := b.History(ctx, hi.ID); err != nil || h != nil {
		t.Fatalf("a new session's history: %+v, %v; want none", h, err)
	}
	applesThenExit(t, ns.URL(), c, hi.ID)
	res, err := b.Do(ctx, hi.ID, &host.Command{Type: host.CommandResume})
	if err != nil {
		t.Fatal(err)
	}
	next := res.Session.ID
	if s, err := c.Session(ctx, next); err != nil || s.From != hi.ID {
		t.Fatalf("the resumed session's record: %+v, %v; want from %s", s, err, hi.ID)
	}
	// says checks that h has the earlier conversation.
	says := func(what string, h *host.History) {
		t.Helper()
		if h == nil || h.Source != hi.SessionID {
			t.Fatalf("%s: %+v, want the conversation of %s", what, h, hi.SessionID)
		}
		var texts []string
		for _, m := range h.Messages {
			var line struct {
				Type    string `json:"type"`
				Message struct {
					Content json.RawMessage `json:"content"`
				} `json:"message"`
			}
			if err := json.Unmarshal(m, &line); err != nil {
				t.Fatalf("%s: message %s: %v", what, m, err)
			}
			texts = append(texts, line.Type+" "+string(line.Message.Content))
		}
		// The fake CLI's file holds its prompts (the real CLI's, its
		// answers too: TestRealCLIResumedHistory in serve).
		if all := strings.Join(texts, "\n"); all != `user "apples"`+"\n"+`user "exit"` {
			t.Fatalf("%s: messages\n%s\nwant the prompts apples and exit", what, all)
		}
	}
	h, err := b.History(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	says("the resumed session's history", h)

	// Through tether serve: its snapshot carries the history.
	const token = "test-token-0123456789abcdef"
	srv := serve.NewServer(b, &serve.Options{Token: token})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	r, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/api/sessions/"+next+"/snapshot", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var sn struct {
		History *serve.History `json:"history"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &sn) != nil || sn.History == nil {
		t.Fatalf("serve's snapshot of the resumed session: %d %s", resp.StatusCode, body)
	}
	says("serve's snapshot", &host.History{Source: sn.History.Source, Messages: sn.History.Messages})

	// A new session from the same conversation (serve's "resume" from
	// the cluster's disk sessions) has it too, and a bad id is refused.
	// The start restores the latest session of the conversation: the
	// resumed one, once it mirrored the file it was restored from.
	waitFor(t, "the resumed session's transcript mirrored", mirrored(t, ns.URL(), next, "apples"))
	other, err := b.Start(ctx, &host.StartRequest{Resume: hi.SessionID, Fork: true})
	if err != nil {
		t.Fatal(err)
	}
	if h, err = b.History(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	says("a fork's history", h)
	if _, err := b.History(ctx, "no such session"); !errors.Is(err, host.ErrNoSession) {
		t.Fatalf("the history of a bad id: %v, want no_session", err)
	}
}

// Who answered a session's approvals goes on over the cluster as on a
// lone serve: the snapshot of a session that ended (nobody runs it) and
// the history of the session resumed in its place say who allowed the
// earlier calls, and a second resume carries both answers, oldest first.
func TestAnsweredApprovalsCarriedOverTheCluster(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 4)
	c := newClient(t, ns.URL())
	b := cluster.NewBackend(c, nil)
	// allowAs runs a turn whose tool call who allows.
	allowAs := func(id string, who *team.Identity) {
		t.Helper()
		f := follow(t, c, id, 0)
		send(t, c, id, "approve")
		ev := f.wait(t, "the approval", func(ev host.Event) bool { return ev.Kind == host.EventApproval })
		var ap host.ApprovalInfo
		if err := json.Unmarshal(ev.Data, &ap); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Command(team.NewContext(ctx, who), id, &host.Command{Type: host.CommandAnswer, Approval: ap.ID, Behavior: "allow"}); err != nil {
			t.Fatal(err)
		}
		f.wait(t, "the turn's end", result("tool allow"))
	}
	// answered checks who answered, in order.
	answered := func(what string, rs []host.ResolvedApproval, by ...string) {
		t.Helper()
		var got []string
		for _, r := range rs {
			if r.Outcome != "allowed" || r.Kind != "tool" || r.ToolName != "Bash" || r.ToolUseID != "toolu_1" || r.Resolved.IsZero() {
				t.Errorf("%s: %+v, want Bash allowed", what, r)
			}
			got = append(got, r.AnsweredBy)
		}
		if !slices.Equal(got, by) {
			t.Fatalf("%s: answered by %q, want %q", what, got, by)
		}
	}

	hi, err := b.Start(ctx, &host.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	allowAs(hi.ID, alice)
	applesThenExit(t, ns.URL(), c, hi.ID)
	snap, err := c.Snapshot(ctx, hi.ID)
	if err != nil {
		t.Fatal(err)
	}
	answered("the ended session's snapshot", snap.Resolved, "Alice")

	res, err := b.Do(ctx, hi.ID, &host.Command{Type: host.CommandResume})
	if err != nil {
		t.Fatal(err)
	}
	next := res.Session.ID
	h, err := b.History(ctx, next)
	if err != nil || h == nil {
		t.Fatalf("the resumed session's history: %+v, %v", h, err)
	}
	answered("the resumed session's history", h.Resolved, "Alice")

	allowAs(next, carol)
	applesThenExit(t, ns.URL(), c, next)
	res, err = b.Do(ctx, next, &host.Command{Type: host.CommandResume})
	if err != nil {
		t.Fatal(err)
	}
	if h, err = b.History(ctx, res.Session.ID); err != nil || h == nil {
		t.Fatalf("the history after a second resume: %+v, %v", h, err)
	}
	answered("the history after a second resume", h.Resolved, "Alice", "Carol")
}
