package claudetest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultAPIKey is the fake API key handed to the CLI when
// MessagesOptions.APIKey is empty.
const DefaultAPIKey = "sk-test"

// RespondFunc chooses the reply to a /v1/messages request. Returning nil
// passes the request on to the queue (MessagesOptions.Replies).
//
// It is called from the server's handler goroutines, possibly
// concurrently, and must not modify r.
type RespondFunc func(r *Request) *Reply

// MessagesOptions configures a MessagesServer. The zero value (or nil) is
// a server that answers every turn with the fallback "ok".
type MessagesOptions struct {
	// Replies is the script: one reply per main-loop /v1/messages request,
	// in order. More can be added later with Enqueue.
	Replies []*Reply

	// Respond, when set, is asked first for every main-loop request, so a
	// reply can depend on the request: on the tool_result that came back,
	// on the model, on a hook's additionalContext. A nil answer falls back
	// to the queue.
	Respond RespondFunc

	// Fallback answers a main-loop request when Respond and the queue have
	// nothing; such requests are flagged Unscripted, so that a test can
	// assert that nothing unexpected was asked (MessagesServer.Unexpected).
	// Nil means TextReply("ok"), which ends the turn quietly instead of
	// leaving the CLI retrying.
	Fallback *Reply

	// IsSideRequest tells side requests (calls the CLI makes besides the
	// agent loop) from main-loop ones, so they never consume the script.
	// Nil means IsSideRequest, the package function.
	IsSideRequest func(r *Request) bool

	// RespondSide answers side requests; nil, or a nil answer, means
	// TextReply("ok").
	RespondSide RespondFunc

	// APIKey is the key CLIEnv hands the CLI; empty means DefaultAPIKey.
	// The server accepts any key: scripts an ErrorReply(401, …) to test
	// authentication failures.
	APIKey string

	// MaxRetries, when non-zero, makes CLIEnv set CLAUDE_CODE_MAX_RETRIES
	// (default 10 in the CLI, with back-off up to ~10 s) so error tests stay
	// fast. A negative value means no retries at all.
	MaxRetries int
}

// IsSideRequest is the default side-request classifier. It matches what
// CLI 2.1.197 and 2.1.330 were seen to send besides the agent loop:
//
//   - a request with no tools and a structured output format
//     (output_config.format): the session title generator, run on
//     the generate_session_title control request;
//   - a request whose last message is the side-question prompt
//     ("<system-reminder>This is a side question from the user…"): the
//     side_question control request, which otherwise looks exactly like
//     the next main-loop call;
//   - a request whose last message is the prompt-suggestion prompt
//     ("[SUGGESTION MODE: …"): the next-prompt guess the CLI makes after a
//     turn with Options.PromptSuggestions on, once the conversation has
//     two replies and the last one's Usage reads as a warm prompt cache
//     (input and output under 10,000 tokens: the estimated defaults of a
//     long system prompt are over that; CachedTextReply is under).
//
// With the environment CLIEnv gives, neither version sent any side request
// on its own, for plain turns, tool loops, thinking, subagents or
// --json-schema. Subagent requests are main-loop requests here (they are
// the model's work and must be scripted); Request.Subagent tells them apart.
// Non-streaming requests are main-loop requests too: when a stream breaks
// before its first block is complete, both versions ask again for the same
// turn with stream:false.
func IsSideRequest(r *Request) bool {
	p := r.Params
	if r.Kind != RequestKindMessages || p == nil {
		return false
	}
	if len(p.Tools) == 0 && hasKey(p.OutputConfig, "format") {
		return true
	}
	if lastUserOpens(p, sideQuestionMarker) || IsPromptSuggestion(r) {
		return true
	}
	return IsModelProbe(r)
}

// IsPromptSuggestion reports the CLI's request for a guess at the next
// prompt (Options.PromptSuggestions): its last message opens with
// "[SUGGESTION MODE:". IsSideRequest counts it as a side request; a
// RespondSide that scripts the guess tells it apart with this.
func IsPromptSuggestion(r *Request) bool {
	return r.Kind == RequestKindMessages && lastUserOpens(r.Params, suggestionMarker)
}

// lastUserOpens reports whether the last message is a user message whose
// text opens with prefix.
func lastUserOpens(p *MessageParams, prefix string) bool {
	if p == nil {
		return false
	}
	n := len(p.Messages)
	return n > 0 && p.Messages[n-1].Role == "user" && strings.HasPrefix(p.Messages[n-1].Text(), prefix)
}

// IsModelProbe reports the request CLI 2.1.330 makes when set_model
// switches models, to check the model answers: not streamed, max_tokens
// 1, no tools (the prompt is "Hi"). 2.1.197 makes none.
func IsModelProbe(r *Request) bool {
	p := r.Params
	if r.Kind != RequestKindMessages || p == nil || p.Stream || p.MaxTokens != 1 || len(p.Tools) != 0 {
		return false
	}
	u := p.LastUser()
	return u != nil && strings.TrimSpace(u.Text()) == "Hi"
}

const (
	sideQuestionMarker = "<system-reminder>This is a side question from the user"
	suggestionMarker   = "[SUGGESTION MODE:"
)

// hasKey reports whether raw is a JSON object with the key.
func hasKey(raw json.RawMessage, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

// MessagesServer is a fake Anthropic Messages API on a loopback port, for
// running the real CLI offline and deterministically: point the CLI at URL
// with the environment from CLIEnv (or let NewRealCLI do it), script the
// model's replies, and inspect every request the CLI made.
//
//	s := claudetest.NewMessagesServer(&claudetest.MessagesOptions{
//		Replies: []*claudetest.Reply{
//			claudetest.ToolUseReply("toolu_1", "Bash", map[string]string{"command": "echo hi"}),
//			claudetest.TextReply("done"),
//		},
//	})
//	t.Cleanup(s.Close) // before starting the CLI, so it closes after the CLI exits
//	cli := claudetest.NewRealCLI(t, s)
//	cmd := cli.Command(ctx) // claude -p --input-format stream-json …
//
// It answers:
//
//   - HEAD / and HEAD /api/hello (the CLI's connectivity probes): 200.
//   - POST /v1/messages (the CLI adds ?beta=true): the next reply, as SSE
//     when the body says stream:true, else as one JSON message.
//   - POST /v1/messages/count_tokens: {"input_tokens":N}, N about a
//     quarter of the body's bytes.
//   - anything else: 404 with an Anthropic-shaped not_found_error,
//     recorded as RequestKindUnknown and reported by Unexpected.
//
// # Scripting
//
// Each main-loop request takes one reply: Respond's, else the next queued
// one, else the Fallback (flagged). Count the requests a turn makes, not
// the turns: a tool loop is one request per model step, a max_tokens stop
// makes the CLI ask again, a retried error is asked again, and a stream
// that breaks before its first block completes is asked again without
// streaming. Subagent requests are main-loop requests, and CLI 2.1.330
// runs agents in the background, so for scripts with subagents route with
// Respond and Request.Subagent rather than rely on queue order. Side
// requests (IsSideRequest) never touch the queue.
//
// Close the server only after the CLI has exited: a CLI whose server
// vanishes mid-request retries with back-off for a long while.
//
// Every method is safe for concurrent use.
type MessagesServer struct {
	// URL is the server's base URL, http://127.0.0.1:port, for
	// ANTHROPIC_BASE_URL.
	URL string

	srv  *httptest.Server
	opts MessagesOptions
	done chan struct{}
	once sync.Once

	mu       sync.Mutex
	queue    []*Reply
	requests []*Request // sorted by Seq
	seq      int
	ids      int
	changed  chan struct{} // closed and replaced whenever requests grows
}

// NewMessagesServer starts a server on a loopback port. The options are
// copied; nil means all defaults. Close it when done.
func NewMessagesServer(opts *MessagesOptions) *MessagesServer {
	s := &MessagesServer{done: make(chan struct{}), changed: make(chan struct{})}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.APIKey == "" {
		s.opts.APIKey = DefaultAPIKey
	}
	if s.opts.IsSideRequest == nil {
		s.opts.IsSideRequest = IsSideRequest
	}
	if s.opts.Fallback == nil {
		s.opts.Fallback = TextReply("ok")
	}
	s.queue = slices.Clone(s.opts.Replies)
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL
	return s
}

// Close stops the server. Streams held open by StallAfterEvents or a Delay
// end at once; Close waits for every handler to return.
func (s *MessagesServer) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Enqueue appends replies to the script.
func (s *MessagesServer) Enqueue(replies ...*Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Pending returns how many scripted replies are still unused.
func (s *MessagesServer) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns every request so far, of every kind, in arrival order.
func (s *MessagesServer) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// MessagesRequests returns the main-loop /v1/messages requests (side
// requests excluded), in arrival order.
func (s *MessagesServer) MessagesRequests() []*Request {
	return s.filter(func(r *Request) bool { return r.Kind == RequestKindMessages && !r.Side })
}

// SideRequests returns the /v1/messages requests classified as side
// requests.
func (s *MessagesServer) SideRequests() []*Request {
	return s.filter(func(r *Request) bool { return r.Kind == RequestKindMessages && r.Side })
}

// Unexpected returns the requests a fully scripted test should not have
// seen: main-loop requests answered by the Fallback, requests to unknown
// paths, and messages requests whose body did not parse.
func (s *MessagesServer) Unexpected() []*Request {
	return s.filter(func(r *Request) bool {
		return r.Unscripted || r.Kind == RequestKindUnknown || r.ParseError != nil
	})
}

func (s *MessagesServer) filter(keep func(*Request) bool) []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Request
	for _, r := range s.requests {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// WaitMessages waits until n main-loop /v1/messages requests have arrived
// and returns them. A request is recorded once its reply is chosen (after
// MessagesOptions.Respond returns) and before the reply is sent, so a test
// can use this to act while the n-th reply is still streaming, but not
// while a Respond func is still deciding.
func (s *MessagesServer) WaitMessages(ctx context.Context, n int) ([]*Request, error) {
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if got := s.MessagesRequests(); len(got) >= n {
			return got[:n], nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %d messages requests (have %d): %w", n, len(s.MessagesRequests()), ctx.Err())
		case <-s.done:
			return nil, fmt.Errorf("waiting for %d messages requests: server closed", n)
		}
	}
}

// maxBody bounds what one request may upload. CLI requests are tens of
// KB; a long transcript with images is a few MB.
const maxBody = 64 << 20

// ServeHTTP implements http.Handler, so the fake can also be mounted in a
// server of the test's own (URL and CLIEnv still describe the loopback
// server NewMessagesServer started).
func (s *MessagesServer) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, maxBody))
	if err != nil {
		return // client went away mid-upload; nothing to answer
	}
	r := &Request{
		Time:   time.Now(),
		Kind:   kindOf(hr),
		Method: hr.Method,
		Path:   hr.URL.Path,
		Query:  hr.URL.Query(),
		Header: s.redact(hr.Header),
		Body:   body,
	}
	if r.Kind == RequestKindMessages || r.Kind == RequestKindCountTokens {
		r.Params, r.ParseError = parseParams(body)
	}
	if r.Kind == RequestKindMessages && r.ParseError == nil {
		r.Side = s.opts.IsSideRequest(r)
	}
	s.mu.Lock()
	s.seq++
	r.Seq = s.seq
	s.mu.Unlock()
	r.RequestID = fmt.Sprintf("req_fake_%06d", r.Seq)

	w.Header().Set("request-id", r.RequestID)
	switch {
	case r.Kind == RequestKindProbe:
		s.record(r)
		w.WriteHeader(http.StatusOK)
	case r.Kind == RequestKindUnknown:
		s.record(r)
		writeError(w, r.RequestID, &HTTPError{Status: http.StatusNotFound,
			Message: fmt.Sprintf("claudetest: no fake for %s %s", hr.Method, hr.URL.Path)})
	case r.ParseError != nil:
		s.record(r)
		writeError(w, r.RequestID, &HTTPError{Status: http.StatusBadRequest,
			Message: fmt.Sprintf("claudetest: cannot parse request body: %v", r.ParseError)})
	case r.Kind == RequestKindCountTokens:
		s.record(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, estimateTokens(len(body)))
	default:
		r.Reply = s.choose(r)
		s.record(r)
		s.serveReply(w, hr, r)
	}
}

func kindOf(hr *http.Request) RequestKind {
	switch {
	case hr.Method == http.MethodHead && (hr.URL.Path == "/" || hr.URL.Path == "/api/hello"):
		return RequestKindProbe
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/messages":
		return RequestKindMessages
	case hr.Method == http.MethodPost && hr.URL.Path == "/v1/messages/count_tokens":
		return RequestKindCountTokens
	}
	return RequestKindUnknown
}

func (s *MessagesServer) redact(h http.Header) http.Header {
	h = h.Clone()
	if k := h.Get("X-Api-Key"); k != "" && k != s.opts.APIKey {
		h.Set("X-Api-Key", "REDACTED")
	}
	if h.Get("Authorization") != "" {
		h.Set("Authorization", "REDACTED")
	}
	return h
}

// choose picks the reply for a messages request and resolves it into what
// will be sent, which becomes r.Reply.
func (s *MessagesServer) choose(r *Request) *Reply {
	var reply *Reply
	if r.Side {
		if s.opts.RespondSide != nil {
			reply = s.opts.RespondSide(r)
		}
		if reply == nil {
			reply = TextReply("ok")
		}
	} else {
		if s.opts.Respond != nil {
			reply = s.opts.Respond(r)
		}
		if reply == nil {
			s.mu.Lock()
			if len(s.queue) > 0 {
				reply = s.queue[0]
				s.queue = s.queue[1:]
			}
			s.mu.Unlock()
		}
		if reply == nil {
			reply = s.opts.Fallback
			r.Unscripted = true
		}
	}
	return s.resolve(r, reply)
}

// resolve returns a copy of reply with its defaults filled in: model, stop
// reason, usage, tool_use ids.
func (s *MessagesServer) resolve(r *Request, reply *Reply) *Reply {
	out := *reply
	if out.Model == "" {
		out.Model = r.Params.Model
	}
	out.StopReason = reply.stopReason()
	out.Content = slices.Clone(reply.Content)
	s.mu.Lock()
	for i := range out.Content {
		if out.Content[i].Type == BlockTypeToolUse && out.Content[i].ID == "" {
			s.ids++
			out.Content[i].ID = fmt.Sprintf("toolu_fake_%06d", s.ids)
		}
	}
	s.mu.Unlock()
	if out.Usage.InputTokens == 0 {
		out.Usage.InputTokens = estimateTokens(len(r.Body))
	}
	if out.Usage.OutputTokens == 0 {
		n := 0
		for _, b := range out.Content {
			n += len(b.Text) + len(b.Thinking) + len(b.Input) + len(b.Data)
		}
		out.Usage.OutputTokens = estimateTokens(n)
	}
	return &out
}

func (s *MessagesServer) record(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.requests), func(i int) bool { return s.requests[i].Seq > r.Seq })
	s.requests = slices.Insert(s.requests, i, r)
	close(s.changed)
	s.changed = make(chan struct{})
}

// estimateTokens is the usual rough rule: about four bytes a token.
func estimateTokens(bytes int) int {
	return max(1, (bytes+3)/4)
}

// wait sleeps for d, returning false early if the client went away or the
// server is closing.
func (s *MessagesServer) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

func (s *MessagesServer) serveReply(w http.ResponseWriter, hr *http.Request, r *Request) {
	reply := r.Reply
	ctx := hr.Context()
	if !s.wait(ctx, reply.Delay) {
		return
	}
	if reply.Error != nil {
		writeError(w, r.RequestID, reply.Error)
		return
	}
	msgID := fmt.Sprintf("msg_fake_%06d", r.Seq)
	if !r.Params.Stream {
		if se := reply.StreamError; se != nil {
			writeError(w, r.RequestID, &HTTPError{Status: http.StatusInternalServerError, Type: cmp.Or(se.Type, "overloaded_error"), Message: se.Message})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(messageJSON(msgID, reply))
		return
	}

	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	events := sseEvents(msgID, reply)
	stall := reply.StallAfterEvents
	for i := 0; ; i++ {
		if se := reply.StreamError; se != nil && i == se.AfterEvents {
			writeEvent(w, "error", streamErrorJSON(r.RequestID, se))
			if flusher != nil {
				flusher.Flush()
			}
			return
		}
		if stall > 0 && i == stall {
			s.wait(ctx, time.Duration(1<<62))
			return
		}
		if i == len(events) {
			return
		}
		if i > 0 && !s.wait(ctx, reply.EventDelay) {
			return
		}
		writeEvent(w, events[i].name, events[i].data)
		if flusher != nil {
			flusher.Flush()
		}
	}
}

type sseEvent struct {
	name string
	data []byte
}

func writeEvent(w io.Writer, name string, data []byte) {
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
}

func writeError(w http.ResponseWriter, requestID string, e *HTTPError) {
	status := e.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	for k, vs := range e.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	typ := e.Type
	if typ == "" {
		typ = defaultErrorType(status)
	}
	msg := e.Message
	if msg == "" {
		msg = defaultErrorMessage(typ)
	}
	json.NewEncoder(w).Encode(errorBody{Type: "error", Error: errorDetail{Type: typ, Message: msg}, RequestID: requestID})
}

func streamErrorJSON(requestID string, se *StreamError) []byte {
	typ := cmp.Or(se.Type, "overloaded_error")
	msg := se.Message
	if msg == "" {
		msg = defaultErrorMessage(typ)
	}
	b, _ := json.Marshal(errorBody{Type: "error", Error: errorDetail{Type: typ, Message: msg}, RequestID: requestID})
	return b
}

type errorBody struct {
	Type      string      `json:"type"`
	Error     errorDetail `json:"error"`
	RequestID string      `json:"request_id"`
}

type errorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Wire shapes of what the server sends.

type usageJSON struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type messageBody struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        usageJSON         `json:"usage"`
}

func usageOf(u Usage, outputTokens int) usageJSON {
	return usageJSON{
		InputTokens:              u.InputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens,
		OutputTokens:             outputTokens,
	}
}

func stopSequence(reply *Reply) *string {
	if reply.StopReason == StopReasonStopSequence {
		return &reply.StopSequence
	}
	return nil
}

func messageJSON(id string, reply *Reply) messageBody {
	stop := string(reply.StopReason)
	m := messageBody{
		ID: id, Type: "message", Role: "assistant", Model: reply.Model,
		Content:      []json.RawMessage{},
		StopReason:   &stop,
		StopSequence: stopSequence(reply),
		Usage:        usageOf(reply.Usage, reply.Usage.OutputTokens),
	}
	for _, b := range reply.Content {
		m.Content = append(m.Content, blockJSON(b, true))
	}
	return m
}

// blockJSON renders b as the API does: complete (full) for a non-streaming
// answer, or empty as in content_block_start, the deltas carrying the rest.
func blockJSON(b ContentBlock, full bool) json.RawMessage {
	var v any
	switch b.Type {
	case BlockTypeText:
		t := b.Text
		if !full {
			t = ""
		}
		v = struct {
			Type BlockType `json:"type"`
			Text string    `json:"text"`
		}{b.Type, t}
	case BlockTypeThinking:
		t, sig := b.Thinking, b.Signature
		if !full {
			t, sig = "", ""
		}
		v = struct {
			Type      BlockType `json:"type"`
			Thinking  string    `json:"thinking"`
			Signature string    `json:"signature"`
		}{b.Type, t, sig}
	case BlockTypeRedactedThinking:
		v = struct {
			Type BlockType `json:"type"`
			Data string    `json:"data"`
		}{b.Type, b.Data}
	case BlockTypeToolUse:
		in := json.RawMessage(`{}`) // content_block_start: the input comes as deltas
		if full && len(b.Input) > 0 {
			in = b.Input
		}
		v = struct {
			Type  BlockType       `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, in}
	default:
		// A block type this fake does not stream (server_tool_use, …):
		// sent whole, from Raw when the test gave it.
		if len(b.Raw) > 0 {
			return b.Raw
		}
		v = struct {
			Type BlockType `json:"type"`
		}{b.Type}
	}
	out, _ := marshalPlain(v)
	return out
}

// chunks splits s into pieces of at most n runes, never inside a UTF-8
// sequence; an empty s gives none.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for count := 0; i < len(s) && count < n; count++ {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func sseEvents(msgID string, reply *Reply) []sseEvent {
	var evs []sseEvent
	add := func(name string, v any) {
		b, err := marshalPlain(v)
		if err != nil {
			panic("claudetest: " + err.Error())
		}
		evs = append(evs, sseEvent{name, b})
	}
	type delta struct {
		Type        string `json:"type"`
		Text        string `json:"text,omitempty"`
		Thinking    string `json:"thinking,omitempty"`
		Signature   string `json:"signature,omitempty"`
		PartialJSON string `json:"partial_json,omitempty"`
	}
	type blockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta delta  `json:"delta"`
	}
	start := messageBody{
		ID: msgID, Type: "message", Role: "assistant", Model: reply.Model,
		Content: []json.RawMessage{},
		Usage:   usageOf(reply.Usage, 1),
	}
	add("message_start", struct {
		Type    string      `json:"type"`
		Message messageBody `json:"message"`
	}{"message_start", start})
	if reply.Ping {
		add("ping", struct {
			Type string `json:"type"`
		}{"ping"})
	}
	n := reply.chunkSize()
	for i, b := range reply.Content {
		add("content_block_start", struct {
			Type         string          `json:"type"`
			Index        int             `json:"index"`
			ContentBlock json.RawMessage `json:"content_block"`
		}{"content_block_start", i, blockJSON(b, false)})
		switch b.Type {
		case BlockTypeText:
			for _, c := range chunks(b.Text, n) {
				add("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "text_delta", Text: c}})
			}
		case BlockTypeThinking:
			for _, c := range chunks(b.Thinking, n) {
				add("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "thinking_delta", Thinking: c}})
			}
			if b.Signature != "" {
				add("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "signature_delta", Signature: b.Signature}})
			}
		case BlockTypeToolUse:
			in := strings.TrimSpace(string(b.Input))
			if in == "" {
				in = "{}"
			}
			for _, c := range chunks(in, n) {
				add("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "input_json_delta", PartialJSON: c}})
			}
		}
		add("content_block_stop", struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}{"content_block_stop", i})
	}
	add("message_delta", struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage usageJSON `json:"usage"`
	}{Type: "message_delta", Delta: struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}{string(reply.StopReason), stopSequence(reply)}, Usage: usageOf(reply.Usage, reply.Usage.OutputTokens)})
	add("message_stop", struct {
		Type string `json:"type"`
	}{"message_stop"})
	return evs
}
