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
// ForkSession, ArchiveSession, RenameSessionFile, TagSessionFile and
// DeleteSessionFile change them. Options.SessionStore mirrors a session's
// transcript to a SessionStore of your own (a database, a bucket) and
// resumes from it on any machine; ImportSessionToStore and the Store*
// functions move, list and read sessions there.
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
// # Streaming
//
// Receive and ReceiveTurn are single-use iterators (iter.Seq2). Yielded
// errors are not all final: a *LineError (one stdout line could not be
// read) and a *ResultError (a failed turn, yielded with its
// *ResultMessage) are followed by more messages. The session reads the
// CLI's stdout ahead of Receive, so that permission requests are answered
// while the program is busy, up to Options.MaxBufferedBytes of unreceived
// messages (1 MiB by default); past that it stops reading until Receive
// catches up, and the CLI blocks on its writes. Nothing is ever dropped,
// but control requests written after the unread messages (permission,
// hook and MCP requests, the answers to Interrupt and the other control
// calls) wait behind them: receive continuously to keep them flowing, as
// package host does.
//
// # Bounds
//
// Every call that can block takes a ctx and returns by its deadline,
// whatever the CLI does, with an error that matches ctx's error:
//
//   - Writes (Send, the control calls, the answers to the CLI's requests)
//     go out one at a time, each under its caller's ctx: written at once
//     when nothing else is being written, queued for the session's writer
//     goroutine otherwise, so a caller never waits on a stuck write longer
//     than its own ctx allows. A line whose ctx ends before any of it went
//     out is dropped whole and the session goes on. A line cut in the
//     middle (a CLI that stopped reading stdin during a large write)
//     breaks the input: later writes fail with ErrInputBroken, and the
//     session should be closed.
//   - Connect waits for the CLI's answer to initialize until its ctx ends
//     or Options.InitializeTimeout (60 s) passes, then kills the CLI and
//     returns an *InitializeError with its stderr tail. A CLI that exits
//     during the start gives a *ProcessError, with the *ResultError of the
//     result line it wrote first (an unknown --resume id) in the chain.
//   - Close returns within Options.CloseTimeout plus 1 s (plus up to 5 s
//     for the last Appends to an Options.SessionStore), whatever the CLI
//     does: stopped, not reading, not writing, ignoring SIGTERM. It
//     interrupts only a running turn (tracked from the CLI's system/init
//     and result lines, queued prompts included), never an idle session.
//     CloseInput instead closes stdin and lets the running turn finish.
//     Wait reports how the CLI exited, after Close too.
//   - Query ends when the CLI has nothing left running: background tasks
//     (2.1.330 runs the Agent tool in the background) and the turn the CLI
//     starts for their reports, bounded by Options.QueryTaskTimeout.
//     Cancelling its ctx ends the iterator within half a second, whatever
//     the CLI does; a CLI slow to go is closed in the background (within
//     CloseTimeout plus 1 s, reaped, its group killed).
//   - A CLI that exits is seen at once, even with more than
//     Options.MaxBufferedBytes of messages unreceived: Done closes, Wait
//     returns, and Receive still yields those messages, then the error.
//   - Every request from the CLI is answered, also one whose request_id
//     repeats an earlier one (the same answer again, the callback run
//     once).
//
// # Permissions
//
// Set Options.CanUseTool to decide tool use in Go. It runs on its own
// goroutine, even while nobody is reading messages, and its ctx is
// cancelled if the CLI withdraws the request (an interrupt). The model's
// questions to the user (the AskUserQuestion tool) arrive there too: read
// them with ToolPermissionRequest.Questions and answer with
// AnswerQuestions.
//
// Approvals may wait for hours: nothing in Tether times a CanUseTool call
// out, and neither CLI arms a timer on a permission request (the real-CLI
// tests hold one past every Tether bound). Set Options.ApprovalTimeout to
// deny, with a message the model sees, once it passes.
//
// Some options shadow CanUseTool: an allow rule naming a whole tool
// (AllowedTools "Bash", or one in Settings) and the permission modes
// bypassPermissions (every tool) and acceptEdits (file edits) let tools run
// without asking. Connect logs each case through Options.Logger;
// OptionWarnings and Session.Warnings return them as []Warning.
//
// Requests the host never received (it lost a line, or joined late) are
// not lost: the CLI lists the permission, dialog and elicitation requests
// it still waits on in its answer to initialize, and Connect and
// Reinitialize serve each through the same callback, with the same answer,
// as a live one; a request delivered twice is served once.
//
// # Settings and credentials
//
// Settings (a JSON string: env values, apiKeyHelper, hook headers may be
// secrets), ManagedSettings and PluginDirs travel in the initialize
// request, not argv, when Connect knows the CLI reads them there
// (2.1.261 and newer, by the version it probed): other users of the
// machine cannot read them with ps. Older CLIs, and CLIs whose version is
// unknown (a custom Transport, SkipVersionCheck), get them in argv;
// Options.SettingsDelivery and PluginDelivery choose explicitly.
// Session.UpdateEnvironmentVariables renews a credential in a running CLI
// (the CLI applies only its allowlist: CLAUDE_CODE_OAUTH_TOKEN,
// CLAUDE_CODE_SESSION_ACCESS_TOKEN, …).
//
// # CLI versions
//
// Connect refuses options the CLI it found is too old for with a
// *CLIFeatureError (errors.Is ErrNeedsNewerCLI) naming the option and both
// versions, instead of a CLI that exits on an unknown flag or silently
// ignores the option:
//
//	Option                                   Needs      2.1.197 otherwise
//	PerTaskStopAffordance                    2.1.330    ignores it
//	SettingsDelivery: DeliveryInitialize     2.1.261    exits: unknown option --await-initialize
//	PluginDelivery: DeliveryInitialize       2.1.261    exits: unknown option --await-initialize
//	Prewarm (--await-claim)                  2.1.330    exits: unknown option '--await-claim'
//
// The check uses the version Connect probed, or, when it did not probe,
// the version the CLI reports in its answer to initialize (2.1.330 does,
// with its capabilities: Session.HasCapability). Control requests newer
// than the CLI fail with a *ControlError matching ErrUnsupportedRequest.
//
// # Hooks
//
// Options.Hooks registers Go callbacks at points of the CLI's agent loop,
// by HookEvent and tool-name matcher: a PreToolUse hook can allow, deny or
// rewrite a tool call before any permission prompt, a UserPromptSubmit
// hook can add context to the prompt, a Stop hook can make the model go
// on. A HookFunc gets a *HookInput with the event's typed fields in Event
// (and the raw input in Raw) and answers with a *HookOutput; like
// CanUseTool it runs on its own goroutine with a ctx the CLI can cancel.
//
// # MCP servers
//
// Options.MCPServers gives the model more tools, named mcp__<server>__<tool>.
// SDKServer attaches an *mcp.Server from the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) that runs in this process: its
// tools are plain Go functions with typed arguments (mcp.AddTool), and the
// CLI reaches it through the session's control channel, with no port or
// process. A handler's error becomes a tool result marked isError, which
// the model sees; ToolUseID ties a call to the model's tool_use block.
// *MCPStdioServer, *MCPHTTPServer and *MCPSSEServer are servers the CLI
// runs or reaches itself; their headers and env stay off the CLI's command
// line by default (Options.MCPServersDelivery). Every kind takes a Timeout
// per tool call and AlwaysLoad, and MCPToolMeta sets the _meta keys the
// CLI reads from a tool's definition. At runtime, MCPStatus reports the
// servers, SetMCPServers replaces them, ToggleMCPServer and
// ReconnectMCPServer steer one. MCP tools need permission like any other
// tool.
//
// # Agents, prompts and structured output
//
// Options.SystemPrompt replaces Claude Code's system prompt;
// AppendSystemPrompt adds to it (to Claude Code's own when SystemPrompt is
// empty). Options.Agents defines subagents the model starts with the Agent
// tool. Options.JSONSchema (JSONSchemaFor builds one from a Go type) makes
// the model end the turn with structured output, which DecodeOutput turns
// into a Go value.
//
// DecodeToolInput and DecodeInput turn a tool's raw input, in CanUseTool,
// a hook or a ToolUseBlock, into the built-in tool's type (*BashInput,
// *WriteInput, …).
//
// # Errors
//
// Errors match with errors.Is and errors.As: ErrClosed, ErrCLINotFound,
// ErrLineTooLong; *ProcessError (the CLI died: exit code, signal, stderr
// tail), *ControlError (the CLI refused a control request),
// *CLIFeatureError (an option needs a newer CLI), ErrNotApplied (the CLI
// did not confirm settings sent in initialize), *ResultError (a
// turn ended in error: is_error is authoritative, even with subtype
// "success"), *LineError (one stdout line could not be read; the stream
// goes on).
//
// # Processes and transports
//
// By default Connect finds the CLI (Options.CLIPath, $TETHER_CLI_PATH,
// PATH, the usual install places), checks its version, and runs it as a
// *CommandTransport subprocess in its own process group; Close interrupts
// a running turn, closes stdin, waits Options.CloseTimeout, then signals
// the group (SIGTERM, and SIGKILL 400 ms later). Options.Env adds to the host's environment (CLAUDECODE is
// always removed); with Options.EnvOnly it is the whole environment.
// Options.Transport replaces the subprocess: an *IOTransport for a CLI
// started elsewhere, or your own Transport (SSH, containers).
//
// What outlives the CLI depends on the platform. On Linux nothing does: the
// CLI runs under a small supervisor process (this program's own executable,
// re-executed; package initialisers run in it before it takes over, so
// keep them free of side effects) that is a child subreaper and holds a
// pipe to this process. When the CLI exits for any reason, or this process
// dies in any way (no Close, os.Exit, a panic, SIGKILL), the supervisor
// kills every process below the CLI, including those in sessions of their
// own such as the Bash tool's. No OS thread is held per session. Set
// TETHER_NO_SUPERVISOR=1 in the environment, or build as c-shared or
// c-archive, to start the CLI directly instead: then, as on other Unix
// systems, the CLI's process group is killed when it exits and processes
// that left the group survive; on Linux the CLI alone still dies with this
// process. On Windows only the CLI process itself is ended.
//
// A panic in a function you hand Tether (CanUseTool, hooks, an in-process
// MCP server's handlers, Options.Stderr) is recovered: a panicking MCP
// handler becomes an error result the model sees, and the session goes on.
// Options.Stderr runs on a goroutine of its own behind a bounded queue
// (1024 lines, 4 MiB); lines it is too slow for are dropped for it (the
// stderr tail in *ProcessError keeps them), and a blocked Stderr callback
// delays neither Close nor anything else.
//
// Windows: the package builds and speaks the same protocol, and
// discovery looks for claude.exe (PATH, the usual install places, the npm
// prefix). What Windows does not get: process groups (a tool's child
// processes are not killed with the CLI), the CLI's death with the host
// (Linux only), and the signal steps of Close (the CLI is killed at once,
// with no SIGTERM first). No test runs there: the real-CLI tests run on
// Linux and macOS. Batch files are refused with a *BatchFileError: a .bat
// or .cmd in Options.CLIPath or $TETHER_CLI_PATH, and npm's claude.cmd
// shim when discovery finds nothing else, because Go runs a batch file
// through cmd.exe, whose re-parsing of arguments (a system prompt, a JSON
// setting) no quoting makes safe; point CLIPath at claude.exe.
//
// # Parity with the official SDKs
//
// docs/parity.md maps every name the TypeScript Agent SDK declares
// (options, control requests, messages, hooks, tool types) to what covers
// it here, or says why not; a test keeps it true.
//
// # Testing
//
// Package claudetest has a scriptable fake CLI (in process, or as a real
// subprocess re-executing the test binary), a fake Anthropic Messages API
// that lets the real CLI run offline and deterministically, and a
// transcript Recorder whose recordings Replay plays back through the fake
// CLI.
package claude
