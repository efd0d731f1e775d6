package host_test

import (
	"context"
	"encoding/json"

	"github.com/tetherhq/tether/claude/claudetest"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// stubborn plays a turn that streams and then waits; how it reacts to an
// interrupt request and to SIGINT (which cancels ctx in a re-executed
// fake) is what ForceInterrupt is tested against.
func stubborn(honourInterrupt, honourSIGINT bool) claudetest.Script {
	return func(ctx context.Context, c *claudetest.CLI) error {
		bg := context.Background()
		if _, err := c.HandleInitialize(bg); err != nil {
			return err
		}
		if _, err := c.ReadUser(bg); err != nil {
			return err
		}
		c.Write(c.SystemInit(), textStart(c), c.TextDelta(0, "working"))
		rctx := bg
		if honourSIGINT {
			rctx = ctx
		}
		for {
			l, err := c.Read(rctx)
			if err != nil {
				if ctx.Err() != nil {
					c.Write(c.ResultInterrupted())
				}
				return nil
			}
			if l.Subtype == "interrupt" {
				c.Respond(l.RequestID, nil)
				if honourInterrupt {
					c.Write(c.ResultInterrupted())
				}
			}
		}
	}
}

// textStart is the stream event that starts a text block.
func textStart(c *claudetest.CLI) claudetest.Msg {
	return claudetest.Msg{"type": "stream_event", "session_id": c.SessionID(), "parent_tool_use_id": nil, "uuid": "u",
		"event": map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}}
}

// scripts are the fake CLIs the subprocess tests run.
var scripts = map[string]claudetest.Script{
	"echo":              claudetest.Echo,
	"honours-interrupt": stubborn(true, true),
	"ignores-interrupt": stubborn(false, true),
	"ignores-sigint":    stubborn(false, false),
}
