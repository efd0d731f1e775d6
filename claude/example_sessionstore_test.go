package claude_test

import (
	"context"
	"fmt"

	"github.com/tetherhq/tether/claude"
)

// A session mirrored to a store resumes on a machine that never ran it:
// the store is the only copy that has to travel. Any SessionStore works;
// MemorySessionStore keeps it in this process.
func ExampleOptions_sessionStore() {
	ctx := context.Background()
	store := &claude.MemorySessionStore{} // or your database, bucket, …

	// On the first machine: every line the CLI writes to its session
	// file is appended to the store as well.
	s, err := claude.Connect(ctx, &claude.Options{Cwd: "/srv/app", SessionStore: store})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Send(ctx, "Summarize the README"); err != nil {
		fmt.Println(err)
		return
	}
	var id string
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			fmt.Println(err)
			break
		}
		if r, ok := m.(*claude.ResultMessage); ok {
			id = r.SessionID
		}
	}
	s.Close() // after the last Appends (FlushSessionStore waits for them mid-session)

	// On any machine: Resume with the store loads the transcript from it
	// first. The project key defaults to ProjectKey(Cwd).
	s2, err := claude.Connect(ctx, &claude.Options{Cwd: "/srv/app", SessionStore: store, Resume: id})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s2.Close()
}

// ImportSessionToStore moves a session file into a store; the Store*
// functions then read and list it there.
func ExampleImportSessionToStore() {
	ctx := context.Background()
	store := &claude.MemorySessionStore{}
	// A session the real CLI 2.1.197 wrote, in testdata's config directory.
	err := claude.ImportSessionToStore(ctx, "b730704e-2b4a-4c8c-9e6e-9e0dc7398f89", store,
		&claude.ImportSessionOptions{ConfigDir: "testdata/sessions"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range store.Keys() {
		fmt.Println(k)
	}
	sessions, err := claude.StoreListSessions(ctx, store, claude.ProjectKey("/home/user/demo.app_v2"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, si := range sessions {
		fmt.Printf("%q: first %q, last %q\n", si.DisplayTitle(), si.FirstPrompt, si.LastPrompt)
	}
	// Output:
	// -home-user-demo-app-v2/b730704e-2b4a-4c8c-9e6e-9e0dc7398f89
	// "Rewind demo": first "Create notes.txt saying v1", last "Now change it to v2"
}
