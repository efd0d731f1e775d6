package claude_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proctree"
)

// Benchmarks. Reproduce and compare with:
//
//	go test ./claude -run '^$' -bench . -benchmem -count 6 | tee new.txt
//	benchstat old.txt new.txt
//
// Targets on a 2-core machine: BenchmarkReceiveMix >= 400k msgs/s;
// BenchmarkPermissionRoundTrip's p50-µs within 50 µs of BenchmarkPipeEcho's;
// BenchmarkHugeLine peak RSS <= 3x the line.

func init() {
	scripts["firehose"] = firehose
	scripts["permissions"] = permissionLoop
	scripts["pipe-echo"] = pipeEcho
	scripts["huge-line"] = hugeLine
}

// mixLines is a realistic stdout mix: 85% text/input_json deltas, 10%
// assistant messages, 5% tool results, framed and ready to write.
func mixLines() [][]byte {
	const sid = `"session_id":"7d5a3c9e-6a3b-4a5e-9f0e-2b8f5a1c9d10"`
	delta := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there, this is a token %d"}},` + sid + `,"parent_tool_use_id":null,"uuid":"0b0d8a4e-5c8e-4f0e-8a3b-2f1e9c7d6b%02d"}`
	jsonDelta := `{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"ls -la %d"}},` + sid + `,"parent_tool_use_id":null,"uuid":"1b0d8a4e-5c8e-4f0e-8a3b-2f1e9c7d6b%02d"}`
	asst := `{"type":"assistant","message":{"id":"msg_01XyZ%d","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{"type":"text","text":"Here is the answer to your question about the repository layout."}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1234,"cache_creation_input_tokens":0,"cache_read_input_tokens":5678,"output_tokens":42,"service_tier":"standard"},"context_management":null},"parent_tool_use_id":null,` + sid + `,"uuid":"2b0d8a4e-5c8e-4f0e-8a3b-2f1e9c7d6b%02d","request_id":"req_011CXyz"}`
	tool := `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01A%d","type":"tool_result","content":"total 8\ndrwxr-xr-x 2 root root 4096 .\n","is_error":false}]},"parent_tool_use_id":null,` + sid + `,"uuid":"3b0d8a4e-5c8e-4f0e-8a3b-2f1e9c7d6b%02d","timestamp":"2026-11-22T10:00:00.000Z","tool_use_result":{"stdout":"total 8","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}}`
	var out [][]byte
	for i := range 100 {
		var l string
		switch {
		case i < 70:
			l = fmt.Sprintf(delta, i, i)
		case i < 85:
			l = fmt.Sprintf(jsonDelta, i, i)
		case i < 95:
			l = fmt.Sprintf(asst, i, i)
		default:
			l = fmt.Sprintf(tool, i, i)
		}
		out = append(out, append([]byte(l), '\n'))
	}
	return out
}

// realMixLines is the stream the CLI writes with partial messages on, per
// model message: message_start, content_block_start, 12 text deltas, the
// assistant message, content_block_stop, message_delta, message_stop,
// then an assistant tool_use and its user tool_result — 60% token deltas.
func realMixLines() [][]byte {
	const env = `,"session_id":"7d5a3c9e-6a3b-4a5e-9f0e-2b8f5a1c9d10","parent_tool_use_id":null,"uuid":"4b0d8a4e-5c8e-4f0e-8a3b-2f1e9c7d%04[1]d"}`
	const usage = `"usage":{"input_tokens":1234,"cache_creation_input_tokens":0,"cache_read_input_tokens":5678,"output_tokens":42,"service_tier":"standard"}`
	ev := func(event string) string { return `{"type":"stream_event","event":` + event + env }
	var out [][]byte
	add := func(format string, i int) {
		out = append(out, append(fmt.Appendf(nil, format, len(out), i), '\n'))
	}
	for i := range 5 {
		add(ev(`{"type":"message_start","message":{"id":"msg_01XyZ%[2]d","type":"message","role":"assistant","model":"claude-opus-4-8","content":[],"stop_reason":null,"stop_sequence":null,`+usage+`}}`), i)
		add(ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`), i)
		for k := range 12 {
			add(ev(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there, this is token `+strconv.Itoa(k)+` of %[2]d"}}`), i)
		}
		add(`{"type":"assistant","message":{"id":"msg_01XyZ%[2]d","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{"type":"text","text":"Here is the answer to your question about the repository layout."}],"stop_reason":null,"stop_sequence":null,`+usage+`,"context_management":null},"request_id":"req_011CXyz"`+env, i)
		add(ev(`{"type":"content_block_stop","index":0}`), i)
		add(ev(`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":1234,"cache_creation_input_tokens":0,"cache_read_input_tokens":5678,"output_tokens":87}}`), i)
		add(ev(`{"type":"message_stop"}`), i)
		add(`{"type":"assistant","message":{"id":"msg_01XyZ%[2]d","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{"type":"tool_use","id":"toolu_01A%[2]d","name":"Bash","input":{"command":"ls -la","description":"List files"}}],"stop_reason":null,"stop_sequence":null,`+usage+`,"context_management":null},"request_id":"req_011CXyz"`+env, i)
		add(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01A%[2]d","type":"tool_result","content":"total 8\ndrwxr-xr-x 2 root root 4096 .\n","is_error":false}]},"timestamp":"2026-11-22T10:00:00.000Z","tool_use_result":{"stdout":"total 8","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}`+env, i)
	}
	return out
}

// envBenchMix selects firehose's stream: "deltas" (mixLines, the
// default) or "real" (realMixLines).
const envBenchMix = "TETHER_BENCH_MIX"

// benchMix returns the lines of the named mix.
func benchMix(name string) ([][]byte, error) {
	switch name {
	case "", "deltas":
		return mixLines(), nil
	case "real":
		return realMixLines(), nil
	}
	return nil, fmt.Errorf("%s=%q: want deltas or real", envBenchMix, name)
}

// firehose answers a user message "N" with N mixed lines and a result.
func firehose(ctx context.Context, c *claudetest.CLI) error {
	if _, err := c.HandleInitialize(ctx); err != nil {
		return err
	}
	lines, err := benchMix(os.Getenv(envBenchMix))
	if err != nil {
		return err
	}
	for {
		u, err := c.ReadUser(ctx)
		if err != nil {
			return nil
		}
		n, _ := strconv.Atoi(claudetest.UserText(u.Raw))
		w := bufio.NewWriterSize(c.Stdout(), 256<<10)
		for i := range n {
			w.Write(lines[i%len(lines)])
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if err := c.Write(c.ResultSuccess("done")); err != nil {
			return err
		}
	}
}

// BenchmarkDecodeMix is DecodeMessage alone on the mix's lines: the part
// of a host's CPU per message that is decoding (the decode plans take
// every line of both mixes; TestPlannedMixes holds them to it).
func BenchmarkDecodeMix(b *testing.B) { benchmarkDecode(b, mixLines()) }

// BenchmarkDecodeRealMix is DecodeMessage alone on the real mix's lines.
func BenchmarkDecodeRealMix(b *testing.B) { benchmarkDecode(b, realMixLines()) }

// BenchmarkDecodeRealMixParallel is BenchmarkDecodeRealMix on every
// processor at once, each goroutine starting at another line of the mix,
// as sessions decode side by side in one host. The decode plans' guesses
// (plan.next) are shared by them all; with -cpu 1,2 it shows what the
// guesses' writes cost when the goroutines meet different lines.
func BenchmarkDecodeRealMixParallel(b *testing.B) {
	lines := realMixLines()
	for i := range lines {
		lines[i] = bytes.TrimSuffix(lines[i], []byte("\n"))
	}
	var start atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(start.Add(7))
		for ; pb.Next(); i++ {
			if _, err := claude.DecodeMessage(lines[i%len(lines)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchmarkDecode(b *testing.B, lines [][]byte) {
	for i := range lines {
		lines[i] = bytes.TrimSuffix(lines[i], []byte("\n"))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := claude.DecodeMessage(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReceiveMix(b *testing.B) {
	ctx := context.Background()
	s, err := claude.Connect(ctx, claudetest.ExecOptions("firehose"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	if err := s.Send(ctx, strconv.Itoa(b.N)); err != nil {
		b.Fatal(err)
	}
	n := 0
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := m.(*claude.ResultMessage); !ok {
			n++
		}
	}
	b.StopTimer()
	if n != b.N {
		b.Fatalf("received %d messages, want %d", n, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// permissionBody is a can_use_tool request as the CLI writes it,
// pre-encoded so the fake spends as little as it can per request.
var permissionBody = json.RawMessage(`{"tool_name":"Bash","display_name":"Bash","input":{"command":"ls","description":"List files"},"description":"List files","tool_use_id":"toolu_01ABC"}`)

// envLatencyFile names the file where permissionLoop writes the median
// round trip it saw, from the CLI's side, as the goal is stated.
const envLatencyFile = "TETHER_BENCH_LATENCY_FILE"

// median returns the middle of d (sorting it).
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// permissionLoop answers a user message "N" with N permission requests in
// a row.
func permissionLoop(ctx context.Context, c *claudetest.CLI) error {
	if _, err := c.HandleInitialize(ctx); err != nil {
		return err
	}
	for {
		u, err := c.ReadUser(ctx)
		if err != nil {
			return nil
		}
		n, _ := strconv.Atoi(claudetest.UserText(u.Raw))
		lat := make([]time.Duration, 0, n)
		for i := range n {
			// The request is written and its answer read the way
			// pipeEcho echoes (one Write, one Read), so the two
			// benchmarks differ only on the host's side.
			req := fmt.Appendf(nil, `{"type":"control_request","request_id":"cli-req-%d","request":{"subtype":"can_use_tool",%s}`, i, permissionBody[1:])
			t0 := time.Now()
			if err := c.Write(req); err != nil {
				return err
			}
			l, err := c.Read(ctx)
			if err != nil {
				return err
			}
			lat = append(lat, time.Since(t0))
			if l.Response == nil || l.Response.Subtype != "success" {
				return fmt.Errorf("want a success answer to can_use_tool, got %s", l.Raw)
			}
		}
		if f := os.Getenv(envLatencyFile); f != "" && n > 0 {
			if err := os.WriteFile(f, []byte(median(lat).String()), 0o600); err != nil {
				return err
			}
		}
		if err := c.Write(c.ResultSuccess("done")); err != nil {
			return err
		}
	}
}

func BenchmarkPermissionRoundTrip(b *testing.B) {
	ctx := context.Background()
	o := claudetest.ExecOptions("permissions")
	latFile := filepath.Join(b.TempDir(), "p50")
	o.Env[envLatencyFile] = latFile
	o.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		return &claude.PermissionAllow{}, nil
	}
	s, err := claude.Connect(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	if err := s.Send(ctx, strconv.Itoa(b.N)); err != nil {
		b.Fatal(err)
	}
	for _, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportMedian(b, latFile)
}

// reportMedian reports the median round trip the fake CLI wrote to file
// as p50-µs: the goal compares medians, which the mean ns/op (GC pauses,
// a loaded machine's scheduling spikes) overstates.
func reportMedian(b *testing.B, file string) {
	b.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	d, err := time.ParseDuration(string(raw))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(d)/float64(time.Microsecond), "p50-µs")
}

// pipeEcho echoes each stdin line: the floor a permission round trip
// cannot beat.
func pipeEcho(ctx context.Context, c *claudetest.CLI) error {
	for {
		l, err := c.Read(ctx)
		if err != nil {
			return nil
		}
		if err := c.Write(l.Raw); err != nil {
			return err
		}
	}
}

func BenchmarkPipeEcho(b *testing.B) {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), claudetest.EnvScript+"=pipe-echo")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	r := bufio.NewReader(stdout)
	line := []byte(`{"type":"control_response","response":{"subtype":"success","request_id":"cli-req-1","response":{"behavior":"allow","updatedInput":{"command":"ls"}}}}` + "\n")
	b.ResetTimer()
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := stdin.Write(line); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64(median(lat))/float64(time.Microsecond), "p50-µs")
}

// hugeLine answers a user message "N" with one assistant text of N bytes,
// written in chunks so the fake never holds it.
func hugeLine(ctx context.Context, c *claudetest.CLI) error {
	if _, err := c.HandleInitialize(ctx); err != nil {
		return err
	}
	u, err := c.ReadUser(ctx)
	if err != nil {
		return nil
	}
	n, _ := strconv.Atoi(claudetest.UserText(u.Raw))
	n -= len(hugeHead) + len(hugeTail) // the whole line is n bytes
	w := bufio.NewWriterSize(c.Stdout(), 1<<20)
	w.WriteString(hugeHead)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for n > 0 {
		k := min(n, len(chunk))
		w.Write(chunk[:k])
		n -= k
	}
	w.WriteString(hugeTail + "\n")
	if err := w.Flush(); err != nil {
		return err
	}
	if err := c.Write(c.ResultSuccess("done")); err != nil {
		return err
	}
	_, _ = c.ReadUser(ctx)
	return nil
}

// The assistant line around a huge text.
const (
	hugeHead = `{"type":"assistant","message":{"id":"msg_big","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{"type":"text","text":"`
	hugeTail = `"}],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}`
)

// receiveHuge receives one line of size bytes and returns its text's
// length.
func receiveHuge(ctx context.Context, size int) (int, error) {
	s, err := claude.Connect(ctx, claudetest.ExecOptions("huge-line"))
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if err := s.Send(ctx, strconv.Itoa(size)); err != nil {
		return 0, err
	}
	got := 0
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			return 0, err
		}
		if a, ok := m.(*claude.AssistantMessage); ok {
			got = len(a.Text())
		}
	}
	return got, nil
}

func BenchmarkHugeLine64MiB(b *testing.B) {
	const size = 64 << 20
	b.SetBytes(size)
	for b.Loop() {
		got, err := receiveHuge(context.Background(), size)
		if err != nil || got != size-len(hugeHead)-len(hugeTail) {
			b.Fatalf("got %d bytes, %v", got, err)
		}
	}
}

// BenchmarkHugeLinePeakRSS receives a 256 MiB line in a fresh host process
// (so nothing else inflates its high-water mark) and reports the peak RSS
// as a multiple of the line's size.
func BenchmarkHugeLinePeakRSS(b *testing.B) {
	const size = 256 << 20
	for b.Loop() {
		exe, _ := os.Executable()
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "TETHER_HUGE_LINE_HOST="+strconv.Itoa(size))
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		i := bytes.Index(out, []byte("peak-rss-kib="))
		if i < 0 {
			b.Fatalf("no measurement in:\n%s", out)
		}
		var kib int
		fmt.Sscanf(string(out[i+len("peak-rss-kib="):]), "%d", &kib)
		b.ReportMetric(float64(kib)*1024/size, "peakRSS/line")
		b.ReportMetric(float64(kib)/1024, "peakRSS-MiB")
	}
}

// hugeLineHost is the host side of BenchmarkHugeLinePeakRSS: TestMain
// runs it instead of the tests when that benchmark starts the binary with
// TETHER_HUGE_LINE_HOST set, and it prints the process's peak RSS.
func hugeLineHost(v string) {
	size, _ := strconv.Atoi(v)
	got, err := receiveHuge(context.Background(), size)
	if err != nil || got != size-len(hugeHead)-len(hugeTail) {
		fmt.Fprintf(os.Stderr, "got %d bytes, %v\n", got, err)
		os.Exit(1)
	}
	fmt.Printf("peak-rss-kib=%d\n", proctree.StatusKB(os.Getpid(), "VmHWM"))
	os.Exit(0)
}
