package claude_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tetherhq/tether/claude"
)

// These examples read session files a real CLI wrote (testdata/sessions);
// no CLI runs. In a program, leave ListSessionsOptions.ConfigDir empty to
// read the CLI's own directory ($CLAUDE_CONFIG_DIR, else ~/.claude).

func ExampleListSessions() {
	// A config directory holding one session, run in /home/user/demo.app_v2.
	config, err := os.MkdirTemp("", "claude-config")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(config)
	src := filepath.Join("testdata", "sessions", "projects", "-home-user-demo-app-v2", "b730704e-2b4a-4c8c-9e6e-9e0dc7398f89.jsonl")
	dst := claude.SessionFilePath(config, "/home/user/demo.app_v2", "b730704e-2b4a-4c8c-9e6e-9e0dc7398f89")
	fmt.Println(filepath.ToSlash(dst[len(config):]))
	if err := copyFile(src, dst); err != nil {
		fmt.Println(err)
		return
	}

	sessions, err := claude.ListSessions("/home/user/demo.app_v2", &claude.ListSessionsOptions{ConfigDir: config})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range sessions {
		fmt.Printf("%s %q: first %q, last %q (CLI %s, started %s)\n",
			s.ID, s.DisplayTitle(), s.FirstPrompt, s.LastPrompt, s.Version, s.CreatedAt.Format(time.DateOnly))
		// Resume it with Options{Cwd: "/home/user/demo.app_v2", Resume: s.ID}.
	}
	// Output:
	// /projects/-home-user-demo-app-v2/b730704e-2b4a-4c8c-9e6e-9e0dc7398f89.jsonl
	// b730704e-2b4a-4c8c-9e6e-9e0dc7398f89 "Rewind demo": first "Create notes.txt saying v1", last "Now change it to v2" (CLI 2.1.197, started 2026-11-22)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

func ExampleReadSession() {
	path := filepath.Join("testdata", "sessions", "projects", "-home-user-demo-app-v2", "b730704e-2b4a-4c8c-9e6e-9e0dc7398f89.jsonl")
	for e, err := range claude.ReadSession(path) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch e := e.(type) {
		case *claude.UserEntry:
			if e.IsMeta {
				continue
			}
			for _, r := range e.ToolResults() {
				fmt.Printf("  tool result: %.25s…\n", r.Text())
			}
			if t := e.Text(); t != "" {
				fmt.Println("user:", t)
			}
		case *claude.AssistantEntry:
			for _, tu := range e.ToolUses() {
				fmt.Printf("  %s %s\n", tu.Name, tu.Input)
			}
			if t := e.Text(); t != "" {
				fmt.Println("claude:", t)
			}
		case *claude.CustomTitleEntry:
			fmt.Println("(renamed to", e.Title+")")
		}
	}
	// Output:
	// user: Create notes.txt saying v1
	//   Write {"file_path":"notes.txt","content":"v1\n"}
	//   tool result: File created successfully…
	// claude: wrote v1
	// user: Now change it to v2
	//   Write {"file_path":"notes.txt","content":"v2\n"}
	// (renamed to Rewind demo)
	//   tool result: The file notes.txt has be…
	// claude: wrote v2
}
