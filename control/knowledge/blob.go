package knowledge

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/voiced/voiced/storage"
)

// blobs keeps originals in the server's blob directory under
// knowledge/<org id>/<uuid>.<ext>. Keys are made here, never from file
// names, and checked before any use as a path.
type blobs struct{ dir string }

var blobKeyRe = regexp.MustCompile(`^knowledge/[0-9]+/[0-9a-f-]{36}\.(txt|md|csv|pdf|docx)$`)

var extByType = map[string]string{mimeText: ".txt", mimeMarkdown: ".md", mimeCSV: ".csv", mimePDF: ".pdf", mimeDOCX: ".docx"}

// spoolDir is where uploads are written while they are checked; it is in
// the blob directory so keeping one is a rename.
func (b blobs) spoolDir() (string, error) {
	d := filepath.Join(b.dir, "knowledge", "tmp")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("blob dir: %w", err)
	}
	return d, nil
}

// keep moves a checked upload into place and returns its key.
func (b blobs) keep(tmp string, orgID int64, mime string) (string, error) {
	key := fmt.Sprintf("knowledge/%d/%s%s", orgID, storage.NewUUID(), extByType[mime])
	full := filepath.Join(b.dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		return "", fmt.Errorf("blob dir: %w", err)
	}
	if err := os.Rename(tmp, full); err != nil {
		return "", fmt.Errorf("keep upload: %w", err)
	}
	return key, nil
}

// path is the file of key, or "" when key is not a knowledge blob key.
func (b blobs) path(key string) string {
	if !blobKeyRe.MatchString(key) {
		return ""
	}
	return filepath.Join(b.dir, filepath.FromSlash(key))
}

// open opens key's file.
func (b blobs) open(key string) (*os.File, error) {
	p := b.path(key)
	if p == "" {
		return nil, fmt.Errorf("blob key %q is not a knowledge key", key)
	}
	return os.Open(p)
}

// remove deletes key's file; a missing file is not an error.
func (b blobs) remove(key string) {
	if p := b.path(key); p != "" {
		_ = os.Remove(p)
	}
}

// sweepSpool removes spool files older than age: uploads a crashed or
// killed process was still reading. Live uploads are younger than any
// request timeout.
func (b blobs) sweepSpool(age time.Duration, now time.Time) int {
	d := filepath.Join(b.dir, "knowledge", "tmp")
	entries, err := os.ReadDir(d)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if info, err := e.Info(); err == nil && !e.IsDir() && now.Sub(info.ModTime()) > age {
			if os.Remove(filepath.Join(d, e.Name())) == nil {
				n++
			}
		}
	}
	return n
}
