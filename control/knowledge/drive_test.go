package knowledge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// driveFile is one file of the fake Google Drive.
type driveFile struct {
	name, mime string
	size       int64 // metadata size; 0 for Docs and Sheets
	content    []byte
}

// driveServer is a scripted Google Drive API v3 (files.get, files.export,
// alt=media) for the token "ya29.good".
type driveServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string]driveFile
	down  bool
	paths []string
}

func newDriveServer(t *testing.T, files map[string]driveFile) *driveServer {
	d := &driveServer{files: files}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.paths = append(d.paths, r.URL.Path+"?"+r.URL.RawQuery)
		down := d.down
		d.mu.Unlock()
		fail := func(code int, reason, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"errors":[{"domain":"global","reason":%q,"message":%q}]}}`, code, msg, reason, msg)
		}
		if down {
			fail(500, "backendError", "Backend Error")
			return
		}
		if r.Header.Get("Authorization") != "Bearer ya29.good" {
			fail(401, "authError", "Invalid Credentials")
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, "/drive/v3/files/")
		if !ok {
			fail(404, "notFound", "Not Found")
			return
		}
		id, export := strings.CutSuffix(rest, "/export")
		f, ok := files[id]
		if !ok {
			fail(404, "notFound", "File not found: "+id+".")
			return
		}
		q := r.URL.Query()
		switch {
		case export:
			want := map[string]string{knowledge.MimeGoogleDoc: "text/plain", knowledge.MimeGoogleSheet: "text/csv"}[f.mime]
			if want == "" || q.Get("mimeType") != want {
				fail(400, "badRequest", "Export only supports Docs Editors files.")
				return
			}
			if f.size < 0 {
				fail(403, "exportSizeLimitExceeded", "This file is too large to be exported.")
				return
			}
			w.Header().Set("Content-Type", want)
			w.Write(f.content)
		case q.Get("alt") == "media":
			if strings.HasPrefix(f.mime, "application/vnd.google-apps.") {
				fail(403, "fileNotDownloadable", "Only files with binary content can be downloaded. Use Export with Docs Editors files.")
				return
			}
			w.Header().Set("Content-Type", f.mime)
			w.Write(f.content)
		default:
			if q.Get("fields") != "id,name,mimeType,size" {
				fail(400, "invalid", "Invalid field selection")
				return
			}
			m := map[string]any{"id": id, "name": f.name, "mimeType": f.mime}
			if f.size > 0 {
				m["size"] = fmt.Sprint(f.size)
			}
			json.NewEncoder(w).Encode(m)
		}
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *driveServer) requests() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.paths...)
}

func TestImportDrive(t *testing.T) {
	pdf := knowledge.PDFDoc(false, []string{"Kettles boil water quickly."})
	files := map[string]driveFile{
		"doc1":   {name: "Opening hours", mime: knowledge.MimeGoogleDoc, content: []byte("We open at nine and close at five.")},
		"sheet1": {name: "Prices", mime: knowledge.MimeGoogleSheet, content: []byte("sku,price\nA1,30\n")},
		"pdf1":   {name: "guide.pdf", mime: "application/pdf", size: int64(len(pdf)), content: pdf},
		"md1":    {name: "faq", mime: "text/x-markdown", size: 20, content: []byte("# FAQ\n\nAsk us.\n")},
		"img1":   {name: "logo.png", mime: "image/png", size: 10, content: []byte("\x89PNG....")},
		"big1":   {name: "huge.pdf", mime: "application/pdf", size: 60 << 20},
		"bigdoc": {name: "Novel", mime: knowledge.MimeGoogleDoc, content: bytes.Repeat([]byte("word "), (1<<20)/5+10)},
		"noexp":  {name: "Giant sheet", mime: knowledge.MimeGoogleSheet, size: -1},
		"bin1":   {name: "notes.txt", mime: "text/plain", size: 4, content: []byte("\x00\x01\x02\x03")},
	}
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		d := newDriveServer(t, files)
		a := newAPI(t, db, func(c *control.Config) { c.DriveBaseURL = d.URL + "/drive/v3" })
		const path = "/v1/knowledge/documents/import-drive"
		item := func(id string) map[string]any {
			return map[string]any{"id": id, "name": files[id].name, "mimeType": files[id].mime}
		}
		body := func(token string, ids ...string) map[string]any {
			var fs []map[string]any
			for _, id := range ids {
				fs = append(fs, item(id))
			}
			return map[string]any{"access_token": token, "files": fs}
		}
		fieldErr := func(t *testing.T, r resp, field, contains string) {
			t.Helper()
			require.Equal(t, 400, r.status, string(r.body))
			msgs := r.obj(t)[field]
			require.NotNil(t, msgs, string(r.body))
			require.Contains(t, fmt.Sprint(msgs), contains)
		}

		t.Run("Docs, Sheets and files are imported", func(t *testing.T) {
			r := a.do("POST", path, a.adminK, body("ya29.good", "doc1", "sheet1", "pdf1", "md1"))
			require.Equal(t, 201, r.status, string(r.body))
			got := docs(t, r)
			require.Len(t, got, 4)
			want := []struct{ name, file, mime string }{
				{"Opening hours.txt", "Opening hours.txt", "text/plain"}, {"Prices.csv", "Prices.csv", "text/csv"},
				{"guide.pdf", "guide.pdf", "application/pdf"}, {"faq.md", "faq.md", "text/markdown"},
			}
			for i, w := range want {
				require.Equal(t, w.name, got[i]["name"])
				require.Equal(t, w.file, got[i]["original_filename"])
				require.Equal(t, w.mime, got[i]["mime_type"])
				require.Equal(t, "google_drive", got[i]["source_origin"])
				require.Equal(t, "file", got[i]["source_type"])
				require.Equal(t, true, got[i]["has_original"])
			}
			require.Equal(t, "We open at nine and close at five.", a.await(got[0]["id"].(string))["content"])
			require.Contains(t, a.await(got[1]["id"].(string))["content"], "A1")
			require.Contains(t, a.await(got[2]["id"].(string))["content"], "Kettles boil water quickly.")
			require.Equal(t, "ready", a.await(got[3]["id"].(string))["status"])
			reqs := strings.Join(d.requests(), "\n")
			require.Contains(t, reqs, "/drive/v3/files/doc1/export?mimeType=text%2Fplain")
			require.Contains(t, reqs, "/drive/v3/files/sheet1/export?mimeType=text%2Fcsv")
			require.Contains(t, reqs, "/drive/v3/files/pdf1?alt=media")
			// Importing the same Doc again warns of the duplicate.
			r = a.do("POST", path, a.adminK, body("ya29.good", "doc1"))
			require.Equal(t, 201, r.status, string(r.body))
			require.Len(t, warnings(t, r), 1)
		})

		t.Run("bad requests store nothing", func(t *testing.T) {
			before, blobs := a.count(), len(a.blobs())
			for _, tc := range []struct {
				name, field, msg string
				body             map[string]any
			}{
				{"unsupported type", "files", `"logo.png": unsupported Google Drive file type image/png`, body("ya29.good", "doc1", "img1")},
				{"too large by its metadata", "files", `"huge.pdf" is larger than the 50 MB limit for pdf files`, body("ya29.good", "big1", "doc1")},
				{"too large while reading", "files", `"Novel.txt" is larger than the 1 MB limit for txt files`, body("ya29.good", "doc1", "bigdoc")},
				{"too large to export", "files", `"Giant sheet.csv" is too large for Google Drive to export`, body("ya29.good", "noexp")},
				{"content does not match", "files", `"notes.txt" is not UTF-8 text`, body("ya29.good", "bin1")},
				{"not found", "files", `"gone" was not found in Google Drive`, map[string]any{"access_token": "ya29.good", "files": []map[string]any{{"id": "gone", "name": "gone"}}}},
				{"refused token", "access_token", "Google Drive refused this access token", body("ya29.expired", "doc1")},
				{"missing token", "access_token", "This field is required", map[string]any{"files": []map[string]any{item("doc1")}}},
				{"no files", "files", "Choose at least one file", map[string]any{"access_token": "ya29.good", "files": []any{}}},
				{"bad id", "files", "needs its Google Drive id", map[string]any{"access_token": "ya29.good", "files": []map[string]any{{"id": "../x", "name": "x"}}}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					fieldErr(t, a.do("POST", path, a.adminK, tc.body), tc.field, tc.msg)
				})
			}
			require.Equal(t, before, a.count(), "nothing stored")
			require.Len(t, a.blobs(), blobs, "no file kept or spooled")
			for _, p := range d.requests() {
				require.NotContains(t, p, "big1?alt=media", "a file too large by its metadata is not downloaded")
			}
		})

		t.Run("Drive failing is 502", func(t *testing.T) {
			d.mu.Lock()
			d.down = true
			d.mu.Unlock()
			defer func() { d.mu.Lock(); d.down = false; d.mu.Unlock() }()
			before := a.count()
			r := a.do("POST", path, a.adminK, body("ya29.good", "doc1"))
			require.Equal(t, 502, r.status, string(r.body))
			require.Contains(t, r.obj(t)["detail"], "Google Drive could not be reached")
			require.Equal(t, before, a.count())
		})

		t.Run("members may not import", func(t *testing.T) {
			require.Equal(t, 403, a.do("POST", path, a.membT, body("ya29.good", "doc1")).status, "a member's session")
			require.Equal(t, 201, a.do("POST", path, a.adminT, body("ya29.good", "doc1")).status, "an admin's session")
		})
	})
}
