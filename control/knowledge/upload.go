package knowledge

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// The document types (spec/api.md section 2.16).
const (
	mimeText     = "text/plain"
	mimeMarkdown = "text/markdown"
	mimeCSV      = "text/csv"
	mimePDF      = "application/pdf"
	mimeDOCX     = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
)

// typeByExt maps an upload's extension to its type; nothing else is taken.
var typeByExt = map[string]string{".txt": mimeText, ".md": mimeMarkdown, ".markdown": mimeMarkdown, ".csv": mimeCSV, ".pdf": mimePDF, ".docx": mimeDOCX}

func isText(mime string) bool { return strings.HasPrefix(mime, "text/") }

// Limits bound uploads (spec/api.md section 8). Zero means default.
type Limits struct {
	// Text is the largest .txt, .md or .csv file, and JSON content, in
	// bytes. Default 1 MiB.
	Text int64
	// Binary is the largest .pdf or .docx file. Default 50 MiB.
	Binary int64
	// Request bounds all the files of one request together. Default 100 MiB.
	Request int64
	// Files is the most files one request may carry. Default 20.
	Files int
	// DocxExpanded is the most a .docx may decompress to, and DocxRatio
	// the largest decompressed/compressed ratio; beyond either it is a
	// zip bomb. Defaults 200 MiB and 100. DocxEntries bounds its entries
	// (default 2000).
	DocxExpanded int64
	DocxRatio    int64
	DocxEntries  int
}

func (l Limits) withDefaults() Limits {
	if l.Text == 0 {
		l.Text = 1 << 20
	}
	if l.Binary == 0 {
		l.Binary = 50 << 20
	}
	if l.Request == 0 {
		l.Request = 100 << 20
	}
	if l.Files == 0 {
		l.Files = 20
	}
	if l.DocxExpanded == 0 {
		l.DocxExpanded = 200 << 20
	}
	if l.DocxRatio == 0 {
		l.DocxRatio = 100
	}
	if l.DocxEntries == 0 {
		l.DocxEntries = 2000
	}
	return l
}

func (l Limits) forType(mime string) int64 {
	if isText(mime) {
		return l.Text
	}
	return l.Binary
}

// upload is one file of a request, spooled to a temporary file while it
// was read and checked.
type upload struct {
	field    string // "files" or "file"
	filename string // cleaned display name
	mime     string
	tmp      string // temporary file path ("" when refused early)
	size     int64
	sha      string
	textSHA  string // for text types: the hash of the text
}

// discard removes the spooled files.
func discard(ups []*upload) {
	for _, u := range ups {
		if u.tmp != "" {
			os.Remove(u.tmp)
			u.tmp = ""
		}
	}
}

// cleanName makes an uploaded file name safe to show and store: only its
// last path element (a client may send "C:\docs\a.pdf" or "../../a.pdf"),
// control and bidi-override characters dropped, at most 255 characters. It
// is never used as a path.
func cleanName(name string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	name = path.Base(name)
	if name == "." || name == "/" || name == ".." {
		name = ""
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if r := []rune(name); len(r) > 255 {
		name = string(r[:255])
	}
	return name
}

// multipartForm is a parsed upload request.
type multipartForm struct {
	files []*upload
	name  *string
}

// errTooLarge is the request exceeding Limits.Request (400, as every
// too-large body is: spec/api.md section 7 has no 413).
var errTooLarge = api.Err(http.StatusBadRequest, "The upload is too large: all files of one request together may not exceed the request limit.")

// readMultipart reads body as multipart/form-data with boundary, spooling
// each file part into dir through its type's limit: nothing is buffered
// whole in memory, and a file past its limit stops being read. Problems
// with individual files are collected in f, naming each file, so one
// response reports them all.
func readMultipart(body io.Reader, boundary, dir string, lim Limits, f api.Fields) (*multipartForm, error) {
	mr := multipart.NewReader(body, boundary)
	form := &multipartForm{}
	var total int64
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			discard(form.files)
			return nil, api.Err(http.StatusBadRequest, "The multipart body is malformed.")
		}
		field := part.FormName()
		switch field {
		case "name":
			b, err := io.ReadAll(io.LimitReader(part, 4096))
			if err != nil {
				discard(form.files)
				return nil, api.Err(http.StatusBadRequest, "The multipart body is malformed.")
			}
			s := string(b)
			form.name = &s
			continue
		case "files[]", "files", "file":
		default:
			continue // unknown parts are skipped, like unknown JSON fields
		}
		key := "files"
		if field == "file" {
			key = "file"
		}
		if len(form.files) >= lim.Files {
			f.Add(key, fmt.Sprintf("At most %d files may be uploaded at once.", lim.Files))
			discard(form.files)
			return nil, f.Err()
		}
		raw := part.FileName()
		u := &upload{field: key, filename: cleanName(raw)}
		form.files = append(form.files, u)
		if u.filename == "" {
			f.Add(key, "Each file needs a file name.")
			continue
		}
		ext := strings.ToLower(path.Ext(u.filename))
		u.mime = typeByExt[ext]
		if u.mime == "" {
			f.Add(key, fmt.Sprintf("%q: unsupported file type; upload .txt, .md, .csv, .pdf or .docx.", u.filename))
			continue
		}
		n, err := spool(u, part, dir, lim, f)
		if err != nil {
			discard(form.files)
			return nil, err
		}
		total += n
		if total > lim.Request {
			discard(form.files)
			return nil, errTooLarge
		}
	}
	return form, nil
}

// spool copies r, the content of u (whose mime is set), into a new file
// in dir through its type's limit: reading stops one byte past it, and
// a file past its limit is reported in f and not kept. It returns the
// bytes read. A read error is the request's 400; a local one is returned
// as is.
func spool(u *upload, r io.Reader, dir string, lim Limits, f api.Fields) (int64, error) {
	max := lim.forType(u.mime)
	tmp, err := os.CreateTemp(dir, "upload-*")
	if err != nil {
		return 0, fmt.Errorf("spool upload: %w", err)
	}
	u.tmp = tmp.Name()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, max+1))
	cerr := tmp.Close()
	if err != nil {
		return n, errInterrupted
	}
	if cerr != nil {
		return n, fmt.Errorf("spool upload: %w", cerr)
	}
	u.size, u.sha = n, hex.EncodeToString(h.Sum(nil))
	if n > max {
		ext := strings.TrimPrefix(strings.ToLower(path.Ext(u.filename)), ".")
		f.Add(u.field, fmt.Sprintf("%q is larger than the %s limit for %s files.", u.filename, sizeText(max), ext))
		os.Remove(u.tmp)
		u.tmp = ""
	}
	return n, nil
}

// errInterrupted is a file whose content broke off while being read.
var errInterrupted = api.Err(http.StatusBadRequest, "The upload was interrupted or is malformed.")

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// check verifies that a spooled file's content is what its extension
// says, adding a message naming the file to f when it is not: text must be
// UTF-8 without NUL bytes, a PDF must start as one, a .docx must be a Word
// zip whose entries are few and whose declared expansion is in proportion
// to its size (zip bombs are refused before anything is stored).
func check(u *upload, lim Limits, f api.Fields) {
	if u.tmp == "" {
		return
	}
	bad := func(msg string) { f.Add(u.field, fmt.Sprintf("%q %s", u.filename, msg)) }
	if u.size == 0 {
		bad("is empty.")
		return
	}
	switch {
	case isText(u.mime):
		b, err := os.ReadFile(u.tmp) // at most Limits.Text bytes
		if err != nil {
			bad("could not be read.")
			return
		}
		b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			bad("is not UTF-8 text; its content does not match its extension.")
			return
		}
		if len(bytes.TrimSpace(b)) == 0 {
			bad("has no text.")
			return
		}
		u.textSHA = storage.TextHash(string(b))
	case u.mime == mimePDF:
		head := make([]byte, 1024)
		fh, err := os.Open(u.tmp)
		if err != nil {
			bad("could not be read.")
			return
		}
		n, _ := io.ReadFull(fh, head)
		fh.Close()
		if !bytes.Contains(head[:n], []byte("%PDF-")) {
			bad("is not a PDF file; its content does not match its extension.")
		}
	case u.mime == mimeDOCX:
		zr, err := zip.OpenReader(u.tmp)
		if err != nil {
			bad("is not a Word (.docx) file; its content does not match its extension.")
			return
		}
		defer zr.Close()
		if len(zr.File) > lim.DocxEntries {
			bad(fmt.Sprintf("has %d zip entries; a Word document has far fewer, so it is refused.", len(zr.File)))
			return
		}
		var expanded uint64
		doc := false
		for _, e := range zr.File {
			expanded += e.UncompressedSize64
			if e.Name == "word/document.xml" {
				doc = true
			}
		}
		if !doc {
			bad("is not a Word (.docx) file: it has no word/document.xml.")
			return
		}
		if expanded > uint64(lim.DocxExpanded) || expanded > uint64(u.size)*uint64(lim.DocxRatio) {
			bad("decompresses to far more than its size (a zip bomb), so it is refused.")
		}
	}
}

// parseJSONUpload validates a JSON text document {name, content}.
func parseJSONUpload(name, content *string, lim Limits, f api.Fields) (string, string) {
	n := f.Name("name", name, true, 255)
	if content == nil {
		f.Add("content", "This field is required.")
		return n, ""
	}
	if strings.TrimSpace(*content) == "" {
		f.Add("content", "This field may not be blank.")
	} else if int64(len(*content)) > lim.Text {
		f.Add("content", fmt.Sprintf("Ensure this field has no more than %s.", sizeText(lim.Text)))
	}
	return n, *content
}

// multipartBoundary returns the boundary of a multipart/form-data content
// type, or "" for any other content type.
func multipartBoundary(ct string) string {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "multipart/form-data" {
		return ""
	}
	return params["boundary"]
}
