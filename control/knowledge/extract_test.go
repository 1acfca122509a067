package knowledge

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func extractBytes(t *testing.T, mime string, b []byte) (string, []block, error) {
	t.Helper()
	type res struct {
		content string
		blocks  []block
		err     error
	}
	ch := make(chan res, 1)
	go func() {
		c, bl, err := extract(mime, bytes.NewReader(b), int64(len(b)), Limits{}.withDefaults())
		ch <- res{c, bl, err}
	}()
	select {
	case r := <-ch:
		return r.content, r.blocks, r.err
	case <-time.After(5 * time.Second):
		t.Fatal("extraction hangs")
	}
	return "", nil, nil
}

func TestExtract(t *testing.T) {
	t.Run("pdf", func(t *testing.T) {
		c, bl, err := extractBytes(t, mimePDF, PDFDoc(false, []string{"Hello world."}, []string{"Second page."}))
		require.NoError(t, err)
		require.Equal(t, "Hello world.\n\nSecond page.", c)
		require.Equal(t, "Page 2", bl[1].Context)
	})
	for name, tc := range map[string]struct {
		data []byte
		msg  string
	}{
		"broken":    {[]byte("%PDF-1.4\nthis is not really a pdf at all\n%%EOF"), "could not be read"},
		"encrypted": {PDFDoc(true, []string{"Top secret"}), "encrypted"},
		"blank":     {PDFDoc(false, nil), "no extractable text"},
	} {
		t.Run("pdf "+name, func(t *testing.T) {
			_, _, err := extractBytes(t, mimePDF, tc.data)
			var ee *ExtractError
			require.ErrorAs(t, err, &ee)
			require.Contains(t, ee.Msg, tc.msg)
		})
	}
	t.Run("docx", func(t *testing.T) {
		c, bl, err := extractBytes(t, mimeDOCX, DocxDoc("# Safety", "Unplug it.", "# Care", "Descale."))
		require.NoError(t, err)
		require.Equal(t, "Safety\n\nUnplug it.\n\nCare\n\nDescale.", c)
		require.Equal(t, []block{{Context: "Safety", Text: "Unplug it."}, {Context: "Care", Text: "Descale."}}, bl)
	})
	t.Run("docx that lies about its size", func(t *testing.T) {
		_, _, err := extract(mimeDOCX, bytes.NewReader(ZipBomb()), int64(len(ZipBomb())), Limits{DocxExpanded: 1 << 20}.withDefaults())
		require.ErrorContains(t, err, "expands to more than")
	})
	t.Run("markdown", func(t *testing.T) {
		_, bl, err := extractBytes(t, mimeMarkdown, []byte("intro\n\n# A\n\ntext a\n\n## B\n\n- one\n- two\n\n```\ncode\n```\n\n# C\n\n| h1 | h2 |\n|---|---|\n| x | y |\n"))
		require.NoError(t, err)
		require.Equal(t, []block{{Text: "intro"}, {Context: "A", Text: "text a"}, {Context: "A > B", Text: "one\ntwo"}, {Context: "A > B", Text: "code"}, {Context: "C", Text: "h1 | h2\nx | y"}}, bl)
	})
	t.Run("csv", func(t *testing.T) {
		_, bl, err := extractBytes(t, mimeCSV, []byte("a,b\n1,2\n\"3,5\",4\n"))
		require.NoError(t, err)
		require.Equal(t, []block{{Context: "a, b", Text: "1, 2", Rows: true}, {Context: "a, b", Text: "3,5, 4", Rows: true}}, bl)
	})
}

func TestChunkBlocks(t *testing.T) {
	words := func(n int, w string) string { return strings.TrimSpace(strings.Repeat(w+" ", n)) }
	t.Run("packs blocks and splits on context", func(t *testing.T) {
		ch := chunkBlocks([]block{{Context: "A", Text: "one two"}, {Context: "A", Text: "three"}, {Context: "B", Text: "four"}}, 10, 2)
		require.Len(t, ch, 2)
		require.Equal(t, "one two\n\nthree", ch[0].Text)
		require.Equal(t, "B", ch[1].Context)
		require.Equal(t, 1, ch[1].Position)
	})
	t.Run("overlaps prose when size splits", func(t *testing.T) {
		ch := chunkBlocks([]block{{Text: words(8, "a")}, {Text: words(8, "b")}}, 10, 3)
		require.Len(t, ch, 2)
		require.Equal(t, "a a\n\n"+words(8, "b"), ch[1].Text, "as much overlap as fits")
	})
	t.Run("cuts a long block in windows", func(t *testing.T) {
		ch := chunkBlocks([]block{{Text: words(25, "w")}}, 10, 2)
		require.Len(t, ch, 3)
		for _, c := range ch {
			require.LessOrEqual(t, len(strings.Fields(c.Text)), 10)
		}
	})
	t.Run("rows never overlap", func(t *testing.T) {
		var bl []block
		for range 5 {
			bl = append(bl, block{Context: "h", Text: words(4, "r"), Rows: true})
		}
		ch := chunkBlocks(bl, 10, 3)
		require.Len(t, ch, 3)
		require.Equal(t, words(4, "r")+"\n"+words(4, "r"), ch[0].Text)
		require.Equal(t, "h", ch[2].Context)
	})
}

func TestSweepSpool(t *testing.T) {
	b := blobs{t.TempDir()}
	dir, err := b.spoolDir()
	require.NoError(t, err)
	old, fresh := filepath.Join(dir, "upload-old"), filepath.Join(dir, "upload-new")
	require.NoError(t, os.WriteFile(old, []byte("x"), 0o600))
	require.NoError(t, os.WriteFile(fresh, []byte("x"), 0o600))
	now := time.Now()
	require.NoError(t, os.Chtimes(old, now.Add(-2*time.Hour), now.Add(-2*time.Hour)))
	require.Equal(t, 1, b.sweepSpool(time.Hour, now))
	require.NoFileExists(t, old)
	require.FileExists(t, fresh)
}
