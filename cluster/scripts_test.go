package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// memoryCLI is the fake CLI of these tests. Like the real one it keeps
// its conversation in a session file under its config folder
// (CLAUDE_CONFIG_DIR), named by --session-id, and reads it back on
// --resume; so a session resumed on another agent remembers only if the
// file was carried over. Prompts:
//
//	"approve"  asks permission for a Bash call, then says what it got;
//	"hold"     starts a reply and streams until interrupted;
//	"recall"   answers with every earlier prompt of the conversation;
//	"exit"     ends the CLI (exit status 0), as a CLI that ends on its own;
//	"stream N" streams a reply of N ten-character deltas (streamReply);
//	"edit-file PATH TEXT" writes TEXT into PATH with the Write tool;
//	"watch"    starts a watcher (task w1, ambient), which never ends;
//	"background" starts a background agent (task bg1), and
//	"background-done" ends it;
//	anything   else is echoed ("echo: …").
func memoryCLI(ctx context.Context, c *claudetest.CLI) error {
	sid, resumed := "", false
	args := c.Launch.Args
	_ = args
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--session-id="); ok {
			sid = v
		}
		if v, ok := strings.CutPrefix(a, "--resume="); ok {
			sid, resumed = v, true
		}
	}
	if sid == "" {
		return errors.New("memoryCLI: no session id")
	}
	c.SetSessionID(sid)
	var configDir string
	for _, kv := range c.Launch.Env {
		if v, ok := strings.CutPrefix(kv, claude.EnvConfigDir+"="); ok {
			configDir = v
		}
	}
	cwd := c.Launch.Dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	path := claude.SessionFilePath(configDir, cwd, sid)
	var history []string
	if resumed {
		f, err := os.Open(path)
		if err != nil {
			return err // the real CLI fails too: "No conversation found"
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e struct {
				Prompt string `json:"prompt"`
			}
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				history = append(history, e.Prompt)
			}
		}
		f.Close()
	}
	remember := func(prompt string) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		// A user entry as the real CLI writes it (what a resumed
		// session's history shows), and the prompt plainly, for recall.
		line, _ := json.Marshal(map[string]any{"type": "user", "sessionId": sid, "uuid": fmt.Sprintf("u%d-%s", len(history), sid),
			"message": map[string]string{"role": "user", "content": prompt}, "prompt": prompt})
		_, err = f.Write(append(line, '\n'))
		history = append(history, prompt)
		return err
	}
	bg := context.Background()
	if _, err := c.HandleInitialize(bg); err != nil {
		return err
	}
	for {
		u, err := c.ReadUser(bg)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, claudetest.ErrSessionEnded) {
				return nil
			}
			return err
		}
		prompt := claudetest.UserText(u.Raw)
		// Like the real CLI, the prompt is in the file before the reply.
		if err := remember(prompt); err != nil {
			return err
		}
		if n, ok := streamPrompt(prompt); ok {
			streamReply(c, n)
			continue
		}
		if n, ok := floodPrompt(prompt); ok {
			floodReply(c, n)
			continue
		}
		if f := strings.Fields(prompt); len(f) == 3 && f[0] == "edit-file" {
			if err := c.WriteTool("toolu_w", f[1], f[2]+"\n"); err != nil {
				return err
			}
			c.Write(c.AssistantText("written"), c.ResultSuccess("written"))
			continue
		}
		switch prompt {
		case "exit":
			return nil
		case "approve":
			c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "Bash", map[string]string{"command": "ls"}))
			ans, err := c.CanUseTool(bg, "toolu_1", "Bash", map[string]string{"command": "ls"})
			if err != nil {
				return err
			}
			var a struct {
				Behavior string `json:"behavior"`
			}
			json.Unmarshal(ans, &a)
			text := "tool " + a.Behavior
			c.Write(c.ToolResult("toolu_1", "ok", false), c.AssistantText(text), c.ResultSuccess(text))
		case "hold":
			c.Write(c.SystemInit(), textStart(c), c.TextDelta(0, "working"))
			for {
				l, err := c.Read(bg)
				if err != nil {
					return nil
				}
				if l.Type == "control_request" && l.Subtype == "interrupt" {
					c.Respond(l.RequestID, nil)
					c.Write(c.ResultInterrupted())
					break
				}
				if l.Type == "control_request" {
					c.AnswerIdle(l)
				}
			}
		case "watch": // a watcher: a task that is no work (ambient)
			c.Write(c.SystemInit(), c.WatcherStarted("w1", "", "watch the build"),
				c.AssistantText("watching"), c.ResultSuccess("watching"))
		case "background":
			c.Write(c.SystemInit())
			c.StartBackgroundAgent("bg1", "toolu_bg", "review")
			c.Write(c.AssistantText("started"), c.ResultSuccess("started"))
		case "background-done":
			c.Write(c.TaskNotification("bg1", "completed"), c.AssistantText("reviewed"), c.ResultSuccess("reviewed"))
		case "recall":
			text := "remember: " + strings.Join(history[:len(history)-1], "|")
			c.Write(c.SystemInit(), c.AssistantText(text), c.ResultSuccess(text))
		default:
			text := "echo: " + prompt
			c.Write(c.SystemInit(), c.AssistantText(text), c.ResultSuccess(text))
		}
	}
}

// textStart is the stream event that starts a text block.
func textStart(c *claudetest.CLI) claudetest.Msg {
	return claudetest.Msg{"type": "stream_event", "session_id": c.SessionID(), "parent_tool_use_id": nil, "uuid": "u",
		"event": map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}}
}
