package serve_test

// A stand-in server speaking proto.js's protocol on host.Manager, so the
// browser scenarios run before the real serve package lands. It goes
// away once newEnv uses serve's server.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

type devServer struct {
	m   *host.Manager
	cli *claudetest.RealCLI
}

func newDevEnv(t *testing.T, replies ...*claudetest.Reply) *uiEnv {
	t.Helper()
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: replies})
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	d := &devServer{m: host.NewManager(nil), cli: cli}
	t.Cleanup(func() { d.m.Close() })
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("ui")))
	mux.HandleFunc("POST /auth", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/ws", d.ws)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &uiEnv{url: srv.URL + "/#token=dev", origin: srv.URL, cwd: cli.Dir, api: api}
}

type devFrame struct {
	ID      int             `json:"id"`
	Type    string          `json:"type"`
	Session string          `json:"session"`
	After   uint64          `json:"after"`
	Cwd     string          `json:"cwd"`
	Model   string          `json:"model"`
	Mode    string          `json:"permission_mode"`
	Append  string          `json:"append_system_prompt"`
	Resume  string          `json:"resume"`
	Fork    bool            `json:"fork"`
	Command json.RawMessage `json:"command"`
}

type devCommand struct {
	Type     string            `json:"type"`
	Text     string            `json:"text"`
	UUID     string            `json:"uuid"`
	Model    string            `json:"model"`
	Mode     string            `json:"mode"`
	Approval string            `json:"approval"`
	Behavior string            `json:"behavior"`
	Always   bool              `json:"always"`
	Message  string            `json:"message"`
	Answers  map[string]string `json:"answers"`
}

func (d *devServer) info(s *host.Session) map[string]any {
	snap := s.Snapshot()
	st := snap.State.State
	if snap.Ended {
		st = "closed"
	}
	return map[string]any{"id": s.ID(), "session_id": snap.SessionID, "cwd": snap.Cwd, "state": st, "tool": snap.State.Tool, "last_event": s.LastEvent(), "cost": snap.Cost, "model": snap.Model, "permission_mode": snap.PermissionMode}
}

func (d *devServer) ws(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c.SetReadLimit(16 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var wmu sync.Mutex
	write := func(v any) {
		b, _ := json.Marshal(v)
		wmu.Lock()
		defer wmu.Unlock()
		wctx, wc := context.WithTimeout(ctx, 10*time.Second)
		defer wc()
		_ = c.Write(wctx, websocket.MessageText, b)
	}
	subs := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer func() {
		for _, c := range subs {
			c()
		}
	}()
	reply := func(id int, res any, err error) {
		if err != nil {
			write(map[string]any{"type": "reply", "id": id, "error": map[string]string{"message": err.Error()}})
			return
		}
		write(map[string]any{"type": "reply", "id": id, "result": res})
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var f devFrame
		if json.Unmarshal(b, &f) != nil {
			continue
		}
		switch f.Type {
		case "list":
			var list []map[string]any
			for _, s := range d.m.Sessions() {
				list = append(list, d.info(s))
			}
			reply(f.ID, map[string]any{"sessions": list}, nil)
		case "start":
			o := d.cli.Options()
			if f.Cwd != "" {
				o.Cwd = f.Cwd
			}
			o.Model, o.AppendSystemPrompt, o.Resume, o.ForkSession = f.Model, f.Append, f.Resume, f.Fork
			o.PermissionMode = claude.PermissionMode(f.Mode)
			o.IncludePartialMessages = true
			s, err := d.m.Start(ctx, &host.Options{CLI: o})
			if err != nil {
				reply(f.ID, nil, err)
				continue
			}
			reply(f.ID, map[string]any{"session": d.info(s)}, nil)
		case "subscribe":
			s := d.m.Get(f.Session)
			if s == nil {
				reply(f.ID, nil, errors.New("no such session"))
				continue
			}
			if old := subs[f.Session]; old != nil {
				old()
			}
			sctx, scancel := context.WithCancel(ctx)
			subs[f.Session] = scancel
			reply(f.ID, map[string]any{}, nil)
			wg.Add(1)
			go func(after uint64) {
				defer wg.Done()
				for {
					resync := false
					for ev, err := range s.Events(sctx, after) {
						if errors.Is(err, host.ErrResync) {
							resync = true
							break
						}
						if err != nil {
							return
						}
						write(map[string]any{"type": "event", "session": s.ID(), "event": ev})
						after = ev.Seq
					}
					if !resync {
						return
					}
					snap := s.Snapshot()
					write(map[string]any{"type": "snapshot", "session": s.ID(), "snapshot": snap})
					after = snap.Seq
				}
			}(f.After)
		case "unsubscribe":
			if old := subs[f.Session]; old != nil {
				old()
			}
		case "disk_sessions":
			list, err := claude.ListSessions(f.Cwd, &claude.ListSessionsOptions{ConfigDir: filepath.Join(d.cli.Home, ".claude")})
			var out []map[string]any
			for _, s := range list {
				out = append(out, map[string]any{"session_id": s.ID, "title": s.Title, "last_prompt": s.LastPrompt, "first_prompt": s.FirstPrompt, "modified": s.ModTime})
			}
			reply(f.ID, map[string]any{"sessions": out}, err)
		case "do":
			s := d.m.Get(f.Session)
			if s == nil {
				reply(f.ID, nil, errors.New("no such session"))
				continue
			}
			var cmd devCommand
			_ = json.Unmarshal(f.Command, &cmd)
			reply(f.ID, map[string]any{}, d.do(ctx, s, &cmd))
		}
	}
}

func (d *devServer) do(ctx context.Context, s *host.Session, c *devCommand) error {
	switch c.Type {
	case "send":
		_, err := s.Send(ctx, c.Text)
		return err
	case "interrupt":
		return s.Interrupt(ctx)
	case "force_interrupt":
		_, err := s.ForceInterrupt(ctx)
		return err
	case "cancel":
		return s.CancelMessage(ctx, c.UUID)
	case "set_model":
		return s.Claude().SetModel(ctx, c.Model)
	case "set_mode":
		return s.Claude().SetPermissionMode(ctx, claude.PermissionMode(c.Mode))
	case "close":
		return s.Close()
	case "answer":
		a, err := s.Approval(c.Approval)
		if err != nil {
			return err
		}
		switch {
		case c.Answers != nil:
			return a.Answer(c.Answers)
		case c.Behavior == "allow" && c.Always:
			var ups []claude.PermissionUpdate
			for _, u := range a.Request.Suggestions {
				u.Destination = claude.DestinationSession
				ups = append(ups, u)
			}
			return a.AllowAlways(ups...)
		case c.Behavior == "allow":
			return a.Allow()
		default:
			return a.Deny(c.Message)
		}
	}
	return errors.New("unknown command")
}
