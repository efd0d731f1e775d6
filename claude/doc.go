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
//     go through one writer goroutine that owns the CLI's stdin; no lock
//     is held across a write. A line whose ctx ends before any of it went
//     out is dropped whole and the session goes on. A line cut in the
//     middle (a CLI that stopped reading stdin during a large write)
//     breaks the input: later writes fail with ErrInputBroken, and the
//     session should be closed.
//   - Connect waits for the CLI's answer to initialize until its ctx ends
//     or Options.InitializeTimeout (60 s) passes, then kills the CLI and
//     returns an *InitializeError with its stderr tail. A CLI that exits
//     during the start gives a *ProcessError, with the *ResultError of the
//     result line it wrote first (an unknown --resume id) in the chain.
//   - Close returns within Options.CloseTimeout plus 1 s, whatever the CLI
//     does: stopped, not reading, not writing, ignoring SIGTERM. It
//     interrupts only a running turn (tracked from the CLI's system/init
//     and result lines, queued prompts included), never an idle session.
//     CloseInput instead closes stdin and lets the running turn finish.
//     Wait reports how the CLI exited, after Close too.
//   - Query ends when the CLI has nothing left running: background tasks
//     (2.1.330 runs the Agent tool in the background) and the turn the CLI
//     starts for their reports, bounded by Options.QueryTaskTimeout.
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
// runs or reaches itself. At runtime, MCPStatus reports the servers,
// SetMCPServers replaces them, ToggleMCPServer and ReconnectMCPServer
// steer one. MCP tools need permission like any other tool.
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
// tail), *ControlError (the CLI refused a control request), *ResultError (a
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
