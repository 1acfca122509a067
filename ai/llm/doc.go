// Package llm streams chat completions with tool calls from language
// models: the agent's "think" step.
//
// A Request carries the conversation (Messages) and the function tools the
// model may call; a provider's Stream method returns a Stream of Chunks:
// text deltas as the model writes them, each tool call once it is fully
// assembled, and a last chunk carrying FinishReason (and Usage when the
// server reports it), after which Recv returns io.EOF.
//
// Providers:
//   - OpenAI speaks the OpenAI chat completions protocol (POST
//     {base}/chat/completions with "stream": true, server-sent events ended
//     by "data: [DONE]") through the official client, openai-go; OpenAI,
//     Ollama, vLLM and the llama.cpp server all implement it, and the base
//     URL selects which.
//   - Echo repeats the caller's last user message, so the audio path can be
//     exercised end to end with no model and no key.
//
// A Stream belongs to one goroutine (Recv is not safe for concurrent use);
// Close may be called from any goroutine, at any time, and more than once.
// Providers are safe for concurrent use: each Stream call is independent.
package llm
