// Package embed turns texts into vectors, for retrieval over an agent's
// knowledge.
//
// An Embedder returns one vector per text, in the order given. Providers:
//   - OpenAI: the OpenAI embeddings protocol (POST {base}/embeddings)
//     through openai-go, which OpenAI, Ollama, vLLM and the llama.cpp server
//     implement; the base URL selects which.
//
// Errors wrap package ai's taxonomy (ai.ErrRateLimited and the rest).
// Providers are safe for concurrent use.
package embed

import (
	"context"
	"errors"
)

// Embedder is an embeddings provider; *OpenAI is one.
type Embedder interface {
	// Embed returns one vector per text, in the order of texts. It blocks
	// until done or ctx ends.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ErrNoInput is returned by Embed for no texts, or an empty one (which
// servers refuse).
var ErrNoInput = errors.New("embed: no text")
