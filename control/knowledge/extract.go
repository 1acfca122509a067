package knowledge

import (
	"archive/zip"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// block is one structural unit of a document: a paragraph, a list, a
// table, a CSV row, a page. Context is what stands above it (its
// headings, or the CSV header row) and travels with every chunk cut from it.
type block struct {
	Context, Text string
	// Rows marks row-shaped blocks (CSV): chunks never overlap them,
	// since each chunk repeats the header instead.
	Rows bool
}

// ExtractError is a document that cannot be ingested as uploaded
// (encrypted, unreadable, no text). Msg is written for users and becomes
// the document's error; retrying cannot help until the file changes.
type ExtractError struct{ Msg string }

func (e *ExtractError) Error() string { return e.Msg }

func extractErr(format string, a ...any) error { return &ExtractError{Msg: fmt.Sprintf(format, a...)} }

// extract returns a document's text and its blocks. src is the original
// (a file of size bytes) for files; for text documents src holds the text.
func extract(mime string, src io.ReaderAt, size int64, lim Limits) (content string, blocks []block, err error) {
	defer func() {
		// The PDF reader panics on some malformed files; one bad upload must
		// not take the worker down.
		if r := recover(); r != nil {
			content, blocks, err = "", nil, extractErr("The file could not be read; it may be damaged.")
		}
	}()
	switch mime {
	case mimePDF:
		return extractPDF(src, size)
	case mimeDOCX:
		return extractDOCX(src, size, lim)
	}
	b, err := io.ReadAll(io.NewSectionReader(src, 0, size))
	if err != nil {
		return "", nil, err
	}
	s := strings.TrimPrefix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\ufeff")
	if !utf8.ValidString(s) {
		return "", nil, extractErr("The file is not UTF-8 text.")
	}
	switch mime {
	case mimeMarkdown:
		blocks = markdownBlocks([]byte(s))
	case mimeCSV:
		if blocks, err = csvBlocks(s); err != nil {
			return "", nil, err
		}
	default:
		blocks = paragraphBlocks(s, "")
	}
	if strings.TrimSpace(s) == "" || len(blocks) == 0 {
		return "", nil, extractErr("The document has no text.")
	}
	return s, blocks, nil
}

// paragraphBlocks splits text on blank lines.
func paragraphBlocks(s, context string) []block {
	var out []block
	for _, p := range strings.Split(s, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, block{Context: context, Text: p})
		}
	}
	return out
}

// markdownBlocks walks the Markdown tree: each top-level block becomes a
// block whose context is the chain of headings above it ("Setup > Linux").
func markdownBlocks(src []byte) []block {
	md := goldmark.New(goldmark.WithExtensions(extension.Table))
	doc := md.Parser().Parse(text.NewReader(src))
	var headings []string // headings[i] is the current heading of level i+1
	var out []block
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok {
			t := strings.TrimSpace(nodeText(h, src))
			if h.Level-1 < len(headings) {
				headings = headings[:h.Level-1]
			}
			for len(headings) < h.Level-1 {
				headings = append(headings, "")
			}
			headings = append(headings, t)
			continue
		}
		var t string
		switch n.(type) {
		case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock:
			t = linesText(n, src)
		default:
			t = nodeText(n, src)
		}
		if t = strings.TrimSpace(t); t != "" {
			var ctx []string
			for _, h := range headings {
				if h != "" {
					ctx = append(ctx, h)
				}
			}
			out = append(out, block{Context: strings.Join(ctx, " > "), Text: t})
		}
	}
	return out
}

// nodeText is the plain text under n: inline text joined, block children
// on their own lines, table cells separated by " | ".
func nodeText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		switch v := c.(type) {
		case *ast.Text:
			if entering {
				b.Write(v.Segment.Value(src))
				if v.SoftLineBreak() || v.HardLineBreak() {
					b.WriteByte('\n')
				}
			}
		case *ast.String:
			if entering {
				b.Write(v.Value)
			}
		case *ast.CodeSpan:
			// its Text children carry the code
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			if entering {
				b.WriteString(linesText(c, src))
				return ast.WalkSkipChildren, nil
			}
		case *east.TableCell:
			if !entering && c.NextSibling() != nil {
				b.WriteString(" | ")
			}
		default:
			if !entering && c.Type() == ast.TypeBlock && c != n && b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
				b.WriteByte('\n')
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

func linesText(n ast.Node, src []byte) string {
	var b strings.Builder
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		s := lines.At(i)
		b.Write(s.Value(src))
	}
	return b.String()
}

// csvBlocks makes each data row a block carrying the header row.
func csvBlocks(s string) ([]block, error) {
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = true
	head, err := r.Read()
	if err == io.EOF {
		return nil, extractErr("The CSV file has no rows.")
	}
	if err != nil {
		return nil, extractErr("The CSV file could not be parsed: %s", csvErr(err))
	}
	header := strings.Join(head, ", ")
	var out []block
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, extractErr("The CSV file could not be parsed: %s", csvErr(err))
		}
		row := strings.TrimSpace(strings.Join(rec, ", "))
		if row != "" && strings.Trim(row, ", ") != "" {
			out = append(out, block{Context: header, Text: row, Rows: true})
		}
	}
	if len(out) == 0 {
		// A header alone is still text worth finding.
		out = append(out, block{Text: header, Rows: true})
	}
	return out, nil
}

func csvErr(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d: %v", pe.Line, pe.Err)
	}
	return "malformed CSV"
}

// extractPDF reads each page's text; a page is a block with context
// "Page N".
func extractPDF(src io.ReaderAt, size int64) (string, []block, error) {
	r, err := pdf.NewReader(src, size)
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(err.Error(), "encrypt") {
			return "", nil, extractErr("The PDF is encrypted; upload a copy without a password.")
		}
		return "", nil, extractErr("The PDF could not be read; it may be damaged.")
	}
	var all []string
	var out []block
	for i := 1; i <= r.NumPage(); i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		t, err := p.GetPlainText(nil)
		if err != nil {
			return "", nil, extractErr("Page %d of the PDF could not be read.", i)
		}
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		all = append(all, t)
		for _, b := range paragraphBlocks(t, fmt.Sprintf("Page %d", i)) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return "", nil, extractErr("The PDF has no extractable text (scanned pages need OCR, which is not supported).")
	}
	return strings.Join(all, "\n\n"), out, nil
}

// extractDOCX reads word/document.xml: paragraphs are blocks, and
// paragraphs styled as headings become the context of what follows. The
// decompressed XML is read through a limit, so a zip whose headers lie
// about sizes still cannot expand without bound.
func extractDOCX(src io.ReaderAt, size int64, lim Limits) (string, []block, error) {
	zr, err := zip.NewReader(src, size)
	if err != nil {
		return "", nil, extractErr("The Word document could not be read; it may be damaged.")
	}
	var doc *zip.File
	for _, f := range zr.File {
		if f.Name == "word/document.xml" {
			doc = f
		}
	}
	if doc == nil {
		return "", nil, extractErr("The file is not a Word document (no word/document.xml).")
	}
	rc, err := doc.Open()
	if err != nil {
		return "", nil, extractErr("The Word document could not be read; it may be damaged or encrypted.")
	}
	defer rc.Close()
	lr := &io.LimitedReader{R: rc, N: lim.DocxExpanded + 1}
	dec := xml.NewDecoder(lr)
	var (
		out      []block
		all      []string
		para     strings.Builder
		style    string
		inText   bool
		headings []string
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if lr.N <= 0 {
			return "", nil, extractErr("The Word document expands to more than %d MB of text.", lim.DocxExpanded>>20)
		}
		if err != nil {
			return "", nil, extractErr("The Word document could not be read; its XML is malformed.")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				para.WriteByte('\t')
			case "br", "cr":
				para.WriteByte('\n')
			case "p":
				para.Reset()
				style = ""
			case "pStyle":
				for _, a := range t.Attr {
					if a.Name.Local == "val" {
						style = a.Value
					}
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				p := strings.TrimSpace(para.String())
				if p == "" {
					continue
				}
				all = append(all, p)
				if lvl := headingLevel(style); lvl > 0 {
					if lvl-1 < len(headings) {
						headings = headings[:lvl-1]
					}
					for len(headings) < lvl-1 {
						headings = append(headings, "")
					}
					headings = append(headings, p)
					continue
				}
				var ctx []string
				for _, h := range headings {
					if h != "" {
						ctx = append(ctx, h)
					}
				}
				out = append(out, block{Context: strings.Join(ctx, " > "), Text: p})
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		}
	}
	if len(all) == 0 {
		return "", nil, extractErr("The Word document has no text.")
	}
	if len(out) == 0 { // headings only
		out = append(out, block{Text: strings.Join(all, "\n")})
	}
	return strings.Join(all, "\n\n"), out, nil
}

// headingLevel reads Word's built-in heading styles (Heading1..Heading9,
// Title).
func headingLevel(style string) int {
	s := strings.ToLower(style)
	if s == "title" {
		return 1
	}
	if strings.HasPrefix(s, "heading") && len(s) == len("heading")+1 && s[7] >= '1' && s[7] <= '9' {
		return int(s[7] - '0')
	}
	return 0
}
