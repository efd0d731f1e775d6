// Package claude drives the Claude Code CLI from Go programs.
//
// It starts the CLI (`claude -p --input-format stream-json
// --output-format stream-json --verbose`), speaks its newline-delimited
// JSON protocol in both directions, and gives you typed messages,
// permission callbacks and control requests on top.
//
// # Quick start
//
// One prompt, one process:
//
//	for msg, err := range claude.Query(ctx, "What is 2+2?", nil) {
//		if err != nil {
//			return err
//		}
//		if m, ok := msg.(*claude.AssistantMessage); ok {
//			fmt.Print(m.Text())
//		}
//	}
//
// # Sessions
//
// Connect starts a long-lived CLI: Send prompts, read with Receive (every
// message until the session ends) or ReceiveTurn (up to the turn's
// *ResultMessage), steer it with Interrupt, SetModel, SetPermissionMode
// and Control, and end it with Close. The CLI merges messages sent during a
// turn into one next turn, with one result: don't expect a result per Send.
//
// Every other control request the CLI serves has a method too: ask
// (ContextUsage, Usage, SessionCost, Settings, BinaryVersion), reload
// (ReloadSkills, ReloadPlugins), change (RenameSession, ApplyFlagSettings),
// undo (RewindFiles, with EnvEnableFileCheckpointing, and
// CancelAsyncMessage for a message still queued), manage tasks
// (BackgroundTasks, StopTask) and EndSession.
//
// # Session files
//
// The CLI keeps each session's transcript on disk. ListSessions lists the
// sessions run in a directory (to offer Options.Resume) and ReadSession
// reads one back as typed entries, in Go, without starting the CLI.
//
// # Messages
//
// Every stdout line becomes a Message: *AssistantMessage (one content
// block each), *UserMessage (tool results, replays), *ResultMessage (end of
// a turn), *StreamEvent (token deltas, with Options.IncludePartialMessages),
// one type per system subtype (*InitMessage, *StatusMessage,
// *APIRetryMessage, …) and the rest. Types and subtypes this version does
// not know arrive as *UnknownMessage or *UnknownSystemMessage with their
// raw JSON, so a newer CLI never breaks a program; every message keeps its
// raw line (RawJSON).
//
// # Permissions
//
// Set Options.CanUseTool to decide tool use in Go. It runs on its own
// goroutine, even while nobody is reading messages, and its ctx is
// cancelled if the CLI withdraws the request (an interrupt).
//
// # Errors
//
// Errors match with errors.Is and errors.As: ErrClosed, ErrCLINotFound,
// ErrLineTooLong; *ProcessError (the CLI died: exit code, signal, stderr
// tail), *ControlError (the CLI refused a control request), *ResultError (a
// turn ended in error: is_error is authoritative, even with subtype
// "success"), *LineError (one stdout line could not be read; the stream
// goes on).
//
// # Testing
//
// Package claudetest has a scriptable fake CLI (in process, or as a real
// subprocess re-executing the test binary) and a fake Anthropic Messages
// API that lets the real CLI run offline and deterministically.
package claude
