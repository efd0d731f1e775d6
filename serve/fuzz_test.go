package serve

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"testing"

	"github.com/tetherhq/tether/host"
)

// stubBackend knows one session, "s1", that has no events yet.
type stubBackend struct{}

func (stubBackend) List(context.Context) ([]SessionInfo, error) {
	return []SessionInfo{{ID: "s1", State: "idle"}}, nil
}
func (stubBackend) Start(context.Context, *StartRequest) (SessionInfo, error) {
	return SessionInfo{}, errors.New("no")
}
func (stubBackend) Events(ctx context.Context, id string, after uint64) iter.Seq2[host.Event, error] {
	return func(yield func(host.Event, error) bool) {
		<-ctx.Done()
		yield(host.Event{}, ctx.Err())
	}
}
func (stubBackend) Snapshot(context.Context, string) (*host.Snapshot, error) {
	return &host.Snapshot{ID: "s1"}, nil
}
func (stubBackend) Do(context.Context, string, *host.Command) (*Result, error) {
	return nil, ErrNoSession
}
func (stubBackend) DiskSessions(context.Context, string) ([]DiskSession, error) {
	return nil, nil
}

// FuzzFrame feeds arbitrary client frames to a connection's handler:
// whatever comes in, it answers with JSON frames and never panics.
func FuzzFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"list","id":1}`, `{"type":"subscribe","id":"a","session":"s1","after":3,"snapshot":true}`,
		`{"type":"do","id":2,"session":"s1","command":{"type":"send","text":"hi","images":[{"media_type":"image/png","data":"AA=="}]}}`,
		`{"type":"start","cwd":"/tmp","fork":true}`, `{"type":"unsubscribe","session":"s1"}`, `{"v":2}`, `not json`, `{"id":[1]}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &Server{b: stubBackend{}, opts: Options{MaxSubscriptions: 4}}
		s.ctx, s.cancel = context.WithCancel(context.Background())
		c := &client{s: s, out: make(chan []byte, 64), subs: map[string]*subscription{}, infos: map[string]*SessionInfo{},
			signal: make(chan struct{}, 1), lanes: map[string]*lane{}, quick: make(chan struct{}, 16)}
		c.ctx, c.cancel = context.WithCancel(s.ctx)
		c.handle(data)
		c.cancel()
		c.endSubs()
		c.wg.Wait()
		close(c.out)
		for b := range c.out {
			if !json.Valid(b) {
				t.Fatalf("frame is not JSON: %s", b)
			}
		}
		s.cancel()
	})
}
