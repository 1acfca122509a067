package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control"
)

// RunTool implements agent.Tools: it runs the tool (runTool) and emits
// the call's telephony.tool webhook event with the result.
func (w phoneTools) RunTool(ctx context.Context, call llm.ToolCall) (string, error) {
	start := time.Now()
	out, err := w.runTool(ctx, call)
	run := control.ToolRun{ToolCallID: call.ID, Name: call.Name, Arguments: json.RawMessage(call.Arguments), Output: out,
		Start: start, End: time.Now()}
	if err != nil {
		run.Output, run.Error = "", err.Error()
	}
	if l := w.calls(); l != nil {
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if eerr := l.ToolEvent(ectx, w.callID, run); eerr != nil {
			w.log.Warn("telephony.tool event not emitted", "tool", call.Name, "err", eerr)
		}
		cancel()
	}
	return out, err
}
