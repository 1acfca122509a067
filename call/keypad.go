package call

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control/calllog"
)

// KeypadToolName is the built-in tool that presses keys on the phone's
// keypad (RFC 4733 telephone-events), to find the way through a menu.
const KeypadToolName = "send_dtmf"

// Keypad is the send_dtmf tool source: offered on outbound phone calls,
// where an automated menu may answer (an inbound caller presses their own
// keys; docs/decisions.md, "The tool chain").
type Keypad struct{}

// keypadTool describes send_dtmf.
var keypadTool = llm.Tool{Name: KeypadToolName,
	Description: "Press keys on the phone keypad, for example to choose an option of an automated menu.",
	Parameters: json.RawMessage(`{"type":"object","required":["digits"],"properties":{"digits":` +
		`{"type":"string","description":"The keys to press in order: 0-9, * and #, at most 32.","pattern":"^[0-9*#]{1,32}$"}}}`)}

// Tools implements Source.
func (Keypad) Tools(c *Info) []llm.Tool {
	if c.Leg == nil || !c.Channel.transfer || c.Direction != calllog.DirectionOutbound {
		return nil
	}
	return []llm.Tool{keypadTool}
}

// Run implements Source: the digits go out on the call's RTP stream.
func (Keypad) Run(_ context.Context, c *Info, tc llm.ToolCall) (string, error) {
	var in struct {
		Digits string `json:"digits"`
	}
	if err := json.Unmarshal([]byte(tc.Arguments), &in); err != nil || in.Digits == "" || len(in.Digits) > 32 {
		return "", errors.New("send_dtmf needs digits: 1 to 32 of 0-9, * and #")
	}
	for _, r := range in.Digits {
		if (r < '0' || r > '9') && r != '*' && r != '#' {
			return "", fmt.Errorf("send_dtmf: %q is not a key", r)
		}
	}
	if err := c.Leg.SendDTMF(in.Digits); err != nil {
		return "", fmt.Errorf("the keys were not sent: %w", err)
	}
	out, _ := json.Marshal(map[string]string{"status": "sent", "digits": in.Digits})
	return string(out), nil
}
