package knowledge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/sqltest"
)

// api drives the real router with real stores and the server's own
// ingestion worker.
type api struct {
	t       *testing.T
	srv     *control.Server
	store   *storage.Store
	blobDir string
	org     storage.Org
	// admin, member: API keys (Bearer) and personal tokens (Token|org).
	adminK, membK, adminT, membT string
}

func newAPI(t *testing.T, db *storage.DB, opts ...func(*control.Config)) *api {
	t.Helper()
	ctx := context.Background()
	store, err := storage.NewStore(db, storage.StoreConfig{SecretKey: bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	lim := coord.NewLocal(coord.Config{})
	t.Cleanup(func() { lim.Close() })
	a := &api{t: t, store: store, blobDir: t.TempDir()}
	cfg := control.Config{PublicURL: "https://voice.example", Resources: control.ResourcesConfig{BlobDir: a.blobDir, SigningKey: []byte("k")}}
	for _, o := range opts {
		o(&cfg)
	}
	a.srv, err = control.New(cfg, nil, store, lim)
	require.NoError(t, err)
	t.Cleanup(a.srv.Close)
	tag := storage.NewUUID()[28:]
	owner, err := store.Orgs.CreateUser(ctx, "owner-"+tag+"@example.com", "Olive", "Owner")
	require.NoError(t, err)
	admin, err := store.Orgs.CreateUser(ctx, "admin-"+tag+"@example.com", "Ada", "Admin")
	require.NoError(t, err)
	member, err := store.Orgs.CreateUser(ctx, "member-"+tag+"@example.com", "Mel", "Member")
	require.NoError(t, err)
	a.org, err = store.Orgs.CreateOrg(ctx, owner.ID, "Acme "+tag)
	require.NoError(t, err)
	_, err = store.Orgs.AddMember(ctx, a.org.ID, admin.ID, storage.RoleAdmin)
	require.NoError(t, err)
	_, err = store.Orgs.AddMember(ctx, a.org.ID, member.ID, storage.RoleMember)
	require.NoError(t, err)
	key := func(u storage.User) string {
		_, raw, err := store.Keys.CreateAPIKey(ctx, a.org.ID, u.ID, "k")
		require.NoError(t, err)
		return "Bearer " + raw
	}
	tok := func(u storage.User) string {
		raw, err := store.Keys.CreatePersonalToken(ctx, u.ID, "t")
		require.NoError(t, err)
		return fmt.Sprintf("Token %s|%d", raw, a.org.ID)
	}
	a.adminK, a.membK, a.adminT, a.membT = key(admin), key(member), tok(admin), tok(member)
	return a
}

type resp struct {
	status int
	body   []byte
	header http.Header
}

func (r resp) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

func (r resp) list(t *testing.T) []map[string]any {
	t.Helper()
	var l []map[string]any
	require.NoError(t, json.Unmarshal(r.body, &l), "body: %s", r.body)
	return l
}

// send sends a request with a raw body and content type.
func (a *api) send(method, path, auth, ctype string, body io.Reader, hdr ...string) resp {
	a.t.Helper()
	req := httptest.NewRequest(method, path, body)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if auth != "" {
		cred, org, _ := strings.Cut(auth, "|")
		req.Header.Set("Authorization", cred)
		if org != "" {
			req.Header.Set("X-Service-Org", org)
		}
	}
	res, err := a.srv.App().Test(req, fiber.TestConfig{Timeout: 60 * time.Second})
	require.NoError(a.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(a.t, err)
	return resp{status: res.StatusCode, body: b, header: res.Header}
}

// do sends JSON.
func (a *api) do(method, path, auth string, body any) resp {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		require.NoError(a.t, err)
		rd = bytes.NewReader(j)
	}
	return a.send(method, path, auth, "application/json", rd)
}

// part is one multipart part: a file when filename is set.
type part struct {
	field, filename string
	data            []byte
}

func file(name string, data []byte) part { return part{field: "files[]", filename: name, data: data} }

// upload sends parts as multipart/form-data.
func (a *api) upload(method, path, auth string, parts ...part) resp {
	a.t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.filename != "" {
			w, err = mw.CreateFormFile(p.field, p.filename)
		} else {
			w, err = mw.CreateFormField(p.field)
		}
		require.NoError(a.t, err)
		w.Write(p.data)
	}
	require.NoError(a.t, mw.Close())
	return a.send(method, path, auth, mw.FormDataContentType(), &b)
}

// await polls a document until its status is final.
func (a *api) await(id string) map[string]any {
	a.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := a.do("GET", "/v1/knowledge/documents/"+id, a.membK, nil)
		require.Equal(a.t, 200, r.status, string(r.body))
		d := r.obj(a.t)
		if d["status"] == "ready" || d["status"] == "failed" {
			return d
		}
		require.True(a.t, time.Now().Before(deadline), "document %s stuck %s", id, d["status"])
		time.Sleep(20 * time.Millisecond)
	}
}

func (a *api) count() int {
	a.t.Helper()
	r := a.do("GET", "/v1/knowledge/documents", a.membK, nil)
	require.Equal(a.t, 200, r.status)
	return len(r.list(a.t))
}

// blobs lists the files kept in the blob directory (not the spool).
func (a *api) blobs() []string {
	var out []string
	filepath.WalkDir(a.blobDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func docs(t *testing.T, r resp) []map[string]any {
	t.Helper()
	var body struct {
		Documents []map[string]any `json:"documents"`
	}
	require.NoError(t, json.Unmarshal(r.body, &body), string(r.body))
	return body.Documents
}

func warnings(t *testing.T, r resp) []map[string]any {
	t.Helper()
	var body struct {
		Warnings []map[string]any `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal(r.body, &body), string(r.body))
	require.NotNil(t, body.Warnings, "warnings is a list, never null")
	return body.Warnings
}

const markdown = "# Returns\n\nItems can be returned within 30 days.\n\n## Damaged items\n\nDamaged parcels are refunded in full.\n\n# Shipping\n\nWe ship worldwide with tracked couriers.\n"
const csvData = "sku,name,price\nA1,Blue kettle,30\nB2,Red toaster,45\n"

func TestDocuments(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db)

		t.Run("JSON text document is ingested", func(t *testing.T) {
			r := a.do("POST", "/v1/knowledge/documents", a.adminK, map[string]any{"name": "Hours", "content": "We open at nine.\n\nWe close at five."})
			require.Equal(t, 201, r.status, string(r.body))
			d := docs(t, r)[0]
			require.Equal(t, "Hours", d["name"])
			require.Equal(t, "text", d["source_type"])
			require.Equal(t, "", d["original_filename"])
			require.Equal(t, "text/plain", d["mime_type"])
			require.EqualValues(t, 35, d["byte_count"])
			require.Equal(t, "pending", d["status"])
			require.Equal(t, false, d["has_original"])
			require.Equal(t, "upload", d["source_origin"])
			require.EqualValues(t, 1, d["estimated_chunk_count"])
			require.Empty(t, warnings(t, r))
			got := a.await(d["id"].(string))
			require.Equal(t, "ready", got["status"])
			require.Equal(t, "", got["error"])
			require.EqualValues(t, 1, got["chunk_count"])
			require.Equal(t, "We open at nine.\n\nWe close at five.", got["content"])
			require.Equal(t, "Ada Admin", got["uploaded_by"].(map[string]any)["name"])
			require.Nil(t, got["replaced_at"])
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, got["created_at"])
		})

		t.Run("multipart upload of every type", func(t *testing.T) {
			r := a.upload("POST", "/v1/knowledge/documents", a.adminT,
				file("policy.md", []byte(markdown)), file("prices.csv", []byte(csvData)), file("notes.txt", []byte("Plain notes about kettles.")),
				file("guide.pdf", knowledge.PDFDoc(false, []string{"Kettles boil water quickly."}, []string{"Descale monthly."})),
				file("manual.docx", knowledge.DocxDoc("# Safety", "Unplug the kettle before cleaning.", "Never immerse the base.")))
			require.Equal(t, 201, r.status, string(r.body))
			ds := docs(t, r)
			require.Len(t, ds, 5)
			want := []string{"text/markdown", "text/csv", "text/plain", "application/pdf", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
			for i, d := range ds {
				require.Equal(t, want[i], d["mime_type"])
				require.Equal(t, "file", d["source_type"])
				require.Equal(t, true, d["has_original"])
				require.Equal(t, d["name"], d["original_filename"])
				got := a.await(d["id"].(string))
				require.Equal(t, "ready", got["status"], "%s: %s", d["name"], got["error"])
				require.Greater(t, got["chunk_count"].(float64), 0.0)
			}
			require.Contains(t, a.await(ds[3]["id"].(string))["content"], "Descale monthly.")
			require.Contains(t, a.await(ds[4]["id"].(string))["content"], "Never immerse the base.")

			// Markdown headings and the CSV header travel with their chunks.
			s := a.do("POST", "/v1/knowledge/search", a.membK, map[string]any{"query": "damaged parcels"}).obj(t)
			require.Equal(t, "bm25", s["mode"])
			top := s["results"].([]any)[0].(map[string]any)
			require.Equal(t, "Returns > Damaged items", top["context"])
			require.Equal(t, "policy.md", top["document_name"])
			require.Equal(t, ds[0]["id"], top["document_id"])
			require.Contains(t, top["text"], "refunded in full")
			require.Greater(t, top["score"], 0.0)
			require.Contains(t, top, "position")
			s = a.do("POST", "/v1/knowledge/search", a.membK, map[string]any{"query": "toaster", "document_ids": []string{ds[1]["id"].(string)}}).obj(t)
			top = s["results"].([]any)[0].(map[string]any)
			require.Equal(t, "sku, name, price", top["context"])
			require.Contains(t, top["text"], "Red toaster")
			s = a.do("POST", "/v1/knowledge/search", a.membK, map[string]any{"query": "immerse", "limit": 1}).obj(t)
			require.Len(t, s["results"], 1)
			require.Equal(t, "Safety", s["results"].([]any)[0].(map[string]any)["context"], "Word headings are context")
		})

		t.Run("single file with a name, and duplicate warnings", func(t *testing.T) {
			body := []byte("Duplicate me, please.")
			r := a.upload("POST", "/v1/knowledge/documents", a.adminK, part{field: "file", filename: "dup.txt", data: body}, part{field: "name", data: []byte("First copy")})
			require.Equal(t, 201, r.status, string(r.body))
			first := docs(t, r)[0]
			require.Equal(t, "First copy", first["name"])
			require.Equal(t, "dup.txt", first["original_filename"])
			require.Empty(t, warnings(t, r))

			r = a.upload("POST", "/v1/knowledge/documents", a.adminK, file("dup-again.txt", body))
			require.Equal(t, 201, r.status)
			ws := warnings(t, r)
			require.Len(t, ws, 1, "same bytes")
			require.Equal(t, docs(t, r)[0]["id"], ws[0]["document_id"])
			require.Equal(t, []any{first["id"]}, ws[0]["duplicate_document_ids"])
			require.NotEmpty(t, ws[0]["message"])

			r = a.do("POST", "/v1/knowledge/documents", a.adminK, map[string]any{"name": "typed", "content": "Duplicate me, please.\r\n"})
			require.Equal(t, 201, r.status)
			require.Len(t, warnings(t, r)[0]["duplicate_document_ids"], 2, "same extracted text")

			r = a.upload("POST", "/v1/knowledge/documents", a.adminK, file("one.txt", []byte("x")), part{field: "name", data: []byte("n")}, file("two.txt", []byte("y")))
			require.Equal(t, 400, r.status, "a name goes with one file only")
		})

		t.Run("unicode and path-like names are names, never paths", func(t *testing.T) {
			r := a.upload("POST", "/v1/knowledge/documents", a.adminK, file("../../etc/パスワード.txt", []byte("secret-ish")), file(`C:\docs\résumé ✓.md`, []byte("# CV\n\ntext")))
			require.Equal(t, 201, r.status, string(r.body))
			ds := docs(t, r)
			require.Equal(t, "パスワード.txt", ds[0]["original_filename"])
			require.Equal(t, "résumé ✓.md", ds[1]["original_filename"])
			for _, p := range a.blobs() {
				require.NotContains(t, p, "パスワード")
				require.NotContains(t, p, "résumé")
				require.True(t, strings.HasPrefix(p, a.blobDir+string(filepath.Separator)))
			}
			o := a.send("GET", "/v1/knowledge/documents/"+ds[1]["id"].(string)+"/original?download=1", a.membK, "", nil)
			require.Equal(t, 200, o.status)
			require.Equal(t, `attachment; filename="r_sum_ _.md"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%E2%9C%93.md`, o.header.Get("Content-Disposition"))
		})

		t.Run("a refused request stores nothing", func(t *testing.T) {
			before, blobsBefore := a.count(), len(a.blobs())
			good := file("ok.txt", []byte("fine"))
			cases := []struct {
				name  string
				parts []part
				msg   string
			}{
				{"binary named .txt", []part{good, file("image.txt", []byte{0x89, 'P', 'N', 'G', 0, 0, 0, 13})}, `image.txt\" is not UTF-8 text`},
				{"not a PDF", []part{good, file("fake.pdf", []byte("hello, I am text"))}, `fake.pdf\" is not a PDF file`},
				{"not a docx", []part{good, file("fake.docx", []byte("PK nothing"))}, `fake.docx\" is not a Word (.docx) file`},
				{"zip without a document", []part{file("empty.docx", knowledge.ZipOf(map[string][]byte{"a.txt": []byte("a")}))}, "no word/document.xml"},
				{"zip bomb", []part{good, file("bomb.docx", knowledge.ZipBomb())}, `bomb.docx\" decompresses to far more than its size`},
				{"unsupported type", []part{good, file("run.exe", []byte("MZ"))}, `run.exe\": unsupported file type`},
				{"no extension", []part{file("README", []byte("x"))}, `README\": unsupported file type`},
				{"empty file", []part{file("empty.txt", nil)}, `empty.txt\" is empty`},
				{"oversize text", []part{good, file("big.txt", bytes.Repeat([]byte("a"), 1<<20+1))}, `big.txt\" is larger than the 1 MB limit for txt files`},
				{"no files", []part{{field: "name", data: []byte("x")}}, "at least one file"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					r := a.upload("POST", "/v1/knowledge/documents", a.adminK, tc.parts...)
					require.Equal(t, 400, r.status, string(r.body))
					require.Contains(t, string(r.body), tc.msg)
					var fields map[string][]string
					require.NoError(t, json.Unmarshal(r.body, &fields), "a field error")
					require.NotEmpty(t, fields["files"])
				})
			}
			// Every bad file is named in one response.
			r := a.upload("POST", "/v1/knowledge/documents", a.adminK, file("a.exe", []byte("x")), good, file("b.pdf", []byte("x")))
			require.Equal(t, 400, r.status)
			var fields map[string][]string
			require.NoError(t, json.Unmarshal(r.body, &fields))
			require.Len(t, fields["files"], 2)

			for _, body := range []any{map[string]any{"name": "x"}, map[string]any{"content": "x"}, map[string]any{"name": "x", "content": "  "},
				map[string]any{"name": "", "content": "x"}, map[string]any{"name": "x", "content": strings.Repeat("a", 1<<20+1)}} {
				require.Equal(t, 400, a.do("POST", "/v1/knowledge/documents", a.adminK, body).status, "%v", body)
			}
			require.Equal(t, 400, a.send("POST", "/v1/knowledge/documents", a.adminK, "application/json", strings.NewReader("{")).status)
			require.Equal(t, 400, a.send("POST", "/v1/knowledge/documents", a.adminK, "multipart/form-data; boundary=x", strings.NewReader("garbage")).status)
			require.Equal(t, before, a.count(), "no document was stored")
			require.Len(t, a.blobs(), blobsBefore, "no file was kept, and the spool is empty")
		})

		t.Run("oversize PDF is refused while reading", func(t *testing.T) {
			before := a.count()
			big := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("0"), 50<<20)...)
			r := a.upload("POST", "/v1/knowledge/documents", a.adminK, file("huge.pdf", big))
			require.Equal(t, 400, r.status)
			require.Contains(t, string(r.body), `huge.pdf\" is larger than the 50 MB limit for pdf files`)
			require.Equal(t, before, a.count())
		})

		t.Run("unreadable PDFs fail with a clear error", func(t *testing.T) {
			for _, tc := range []struct {
				name string
				data []byte
				err  string
			}{
				{"broken.pdf", []byte("%PDF-1.4\nthis is not really a pdf at all\n%%EOF"), "could not be read"},
				{"locked.pdf", knowledge.PDFDoc(true, []string{"Top secret"}), "encrypted"},
				{"blank.pdf", knowledge.PDFDoc(false, nil), "no extractable text"},
			} {
				r := a.upload("POST", "/v1/knowledge/documents", a.adminK, file(tc.name, tc.data))
				require.Equal(t, 201, r.status, string(r.body))
				d := a.await(docs(t, r)[0]["id"].(string))
				require.Equal(t, "failed", d["status"], tc.name)
				require.Contains(t, d["error"], tc.err, tc.name)
				require.EqualValues(t, 0, d["chunk_count"])
			}
		})
	})
}

func TestDocumentLifecycle(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db)
		r := a.do("POST", "/v1/knowledge/documents", a.adminK, map[string]any{"name": "FAQ", "content": "Kettles are blue."})
		text := a.await(docs(t, r)[0]["id"].(string))
		tid := text["id"].(string)
		pdf := knowledge.PDFDoc(false, []string{"Toasters are red."})
		r = a.upload("POST", "/v1/knowledge/documents", a.adminK, file("toaster.pdf", pdf))
		fdoc := a.await(docs(t, r)[0]["id"].(string))
		fid := fdoc["id"].(string)

		t.Run("list filters", func(t *testing.T) {
			l := a.do("GET", "/v1/knowledge/documents", a.membT, nil).list(t)
			require.Len(t, l, 2)
			require.Equal(t, fid, l[0]["id"], "newest first")
			require.NotContains(t, l[0], "content", "lists leave content out")
			require.Len(t, a.do("GET", "/v1/knowledge/documents?q=kettles", a.membK, nil).list(t), 1, "q matches content")
			require.Len(t, a.do("GET", "/v1/knowledge/documents?q=TOASTER.PDF", a.membK, nil).list(t), 1, "q matches names")
			require.Len(t, a.do("GET", "/v1/knowledge/documents?q=%25", a.membK, nil).list(t), 0, "q is literal")
			require.Len(t, a.do("GET", "/v1/knowledge/documents?status=ready", a.membK, nil).list(t), 2)
			require.Len(t, a.do("GET", "/v1/knowledge/documents?status=failed", a.membK, nil).list(t), 0)
			require.Equal(t, 400, a.do("GET", "/v1/knowledge/documents?status=done", a.membK, nil).status)
		})

		t.Run("PATCH re-queues ingestion", func(t *testing.T) {
			r := a.do("PATCH", "/v1/knowledge/documents/"+tid, a.adminK, map[string]any{"content": "Kettles are green now."})
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, "pending", r.obj(t)["status"])
			d := a.await(tid)
			require.Equal(t, "Kettles are green now.", d["content"])
			r = a.do("PATCH", "/v1/knowledge/documents/"+tid, a.adminK, map[string]any{"name": "FAQ v2"})
			require.Equal(t, "pending", r.obj(t)["status"])
			require.Equal(t, "FAQ v2", a.await(tid)["name"])
			r = a.do("PATCH", "/v1/knowledge/documents/"+fid, a.adminK, map[string]any{"content": "x"})
			require.Equal(t, 400, r.status, "a file's text comes from its file")
			require.Contains(t, r.obj(t), "content")
			require.Equal(t, 400, a.do("PATCH", "/v1/knowledge/documents/"+tid, a.adminK, map[string]any{"name": ""}).status)
			require.Equal(t, 404, a.do("PATCH", "/v1/knowledge/documents/"+storage.NewUUID(), a.adminK, map[string]any{"name": "x"}).status)
		})

		t.Run("retry only for failed", func(t *testing.T) {
			r := a.do("POST", "/v1/knowledge/documents/"+tid+"/retry", a.adminK, nil)
			require.Equal(t, 400, r.status)
			require.Contains(t, r.obj(t)["detail"], "Only a failed document")
			r = a.upload("POST", "/v1/knowledge/documents", a.adminK, file("blank.pdf", knowledge.PDFDoc(false, nil)))
			bad := a.await(docs(t, r)[0]["id"].(string))
			require.Equal(t, "failed", bad["status"])
			r = a.do("POST", "/v1/knowledge/documents/"+bad["id"].(string)+"/retry", a.adminK, nil)
			require.Equal(t, 200, r.status)
			require.Equal(t, "pending", r.obj(t)["status"])
			require.Equal(t, "", r.obj(t)["error"])
			require.Equal(t, "failed", a.await(bad["id"].(string))["status"], "the same file fails again")
			require.Equal(t, 404, a.do("POST", "/v1/knowledge/documents/"+storage.NewUUID()+"/retry", a.adminK, nil).status)
		})

		t.Run("original", func(t *testing.T) {
			require.Equal(t, 404, a.send("GET", "/v1/knowledge/documents/"+tid+"/original", a.membK, "", nil).status, "text documents have none")
			o := a.send("GET", "/v1/knowledge/documents/"+fid+"/original", a.membK, "", nil)
			require.Equal(t, 200, o.status)
			require.Equal(t, pdf, o.body)
			require.Equal(t, "application/pdf", o.header.Get("Content-Type"))
			require.True(t, strings.HasPrefix(o.header.Get("Content-Disposition"), `inline; filename="toaster.pdf"`))

			j := a.send("GET", "/v1/knowledge/documents/"+fid+"/original?download=1", a.membK, "", nil, "Accept", "application/json")
			require.Equal(t, 200, j.status)
			m := j.obj(t)
			require.EqualValues(t, 300, m["expires_in"])
			u, err := url.Parse(m["url"].(string))
			require.NoError(t, err)
			require.Equal(t, "voice.example", u.Host)
			got := a.send("GET", u.RequestURI(), "", "", nil)
			require.Equal(t, 200, got.status, "a signed URL needs no credential")
			require.Equal(t, pdf, got.body)
			require.True(t, strings.HasPrefix(got.header.Get("Content-Disposition"), "attachment"))
			q := u.Query()
			q.Set("expires", fmt.Sprint(time.Now().Add(time.Hour).Unix()))
			require.Equal(t, 401, a.send("GET", u.Path+"?"+q.Encode(), "", "", nil).status, "a changed expiry breaks the signature")
			require.Equal(t, 401, a.send("GET", strings.Replace(u.RequestURI(), fid, tid, 1), "", "", nil).status)
		})

		t.Run("replace", func(t *testing.T) {
			r := a.upload("POST", "/v1/knowledge/documents/"+fid+"/replace", a.adminK, part{field: "file", filename: "toaster.pdf", data: pdf})
			require.Equal(t, 200, r.status, string(r.body))
			m := r.obj(t)
			d := m["document"].(map[string]any)
			require.Equal(t, "pending", d["status"])
			require.NotNil(t, d["replaced_at"])
			ws := m["warnings"].([]any)
			require.Len(t, ws, 1, "identical bytes still succeed, with a warning")
			require.Contains(t, ws[0].(map[string]any)["message"], "same bytes")
			a.await(fid)

			n := len(a.blobs())
			r = a.upload("POST", "/v1/knowledge/documents/"+fid+"/replace", a.adminK, part{field: "file", filename: "toaster.docx", data: knowledge.DocxDoc("Toasters are silver.")})
			require.Equal(t, 200, r.status)
			d = a.await(fid)
			require.Equal(t, "toaster.docx", d["original_filename"])
			require.Equal(t, "application/vnd.openxmlformats-officedocument.wordprocessingml.document", d["original_mime_type"])
			require.Equal(t, "Toasters are silver.", d["content"])
			require.Len(t, a.blobs(), n, "the replaced file is removed")

			r = a.upload("POST", "/v1/knowledge/documents/"+fid+"/replace", a.adminK, part{field: "file", filename: "x.docx", data: knowledge.ZipBomb()})
			require.Equal(t, 400, r.status, "same validation as upload")
			require.Equal(t, 400, a.do("POST", "/v1/knowledge/documents/"+fid+"/replace", a.adminK, map[string]any{}).status)
			r = a.upload("PATCH", "/v1/knowledge/documents/"+fid, a.adminK, part{field: "file", filename: "t.txt", data: []byte("Toasters toast.")})
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, "Toasters toast.", a.await(fid)["content"])
		})

		t.Run("delete removes chunks and the file", func(t *testing.T) {
			require.NotEmpty(t, a.do("POST", "/v1/knowledge/search", a.membK, map[string]any{"query": "toasters"}).obj(t)["results"])
			files := len(a.blobs())
			require.Equal(t, 204, a.do("DELETE", "/v1/knowledge/documents/"+fid, a.adminK, nil).status)
			require.Empty(t, a.do("POST", "/v1/knowledge/search", a.membK, map[string]any{"query": "toasters"}).obj(t)["results"])
			n, err := a.store.Knowledge.ChunkCount(context.Background(), fid)
			require.NoError(t, err)
			require.Zero(t, n)
			require.Len(t, a.blobs(), files-1, "the original is removed")
			require.Equal(t, 404, a.do("GET", "/v1/knowledge/documents/"+fid, a.membK, nil).status)
			require.Equal(t, 404, a.do("DELETE", "/v1/knowledge/documents/"+fid, a.adminK, nil).status)
		})

		t.Run("search validation", func(t *testing.T) {
			for _, body := range []any{map[string]any{}, map[string]any{"query": ""}, map[string]any{"query": "x", "limit": 0},
				map[string]any{"query": "x", "limit": 51}, map[string]any{"query": 3}, map[string]any{"query": "x", "document_ids": "a"}} {
				require.Equal(t, 400, a.do("POST", "/v1/knowledge/search", a.membK, body).status, "%v", body)
			}
			s := a.do("POST", "/v1/knowledge/search", a.membK, map[string]any{"query": "the and of"}).obj(t)
			require.Equal(t, []any{}, s["results"], "stop words alone find nothing")
		})
	})
}

func TestRoles(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db)
		r := a.do("POST", "/v1/knowledge/documents", a.adminT, map[string]any{"name": "n", "content": "c"})
		require.Equal(t, 201, r.status)
		id := docs(t, r)[0]["id"].(string)
		kb := a.do("POST", "/v1/knowledge-bases", a.adminK, map[string]any{"name": "KB"}).obj(t)["id"].(string)
		reads := [][2]string{{"GET", "/v1/knowledge/documents"}, {"GET", "/v1/knowledge/documents/" + id}, {"GET", "/v1/knowledge-bases"},
			{"GET", "/v1/knowledge-bases/" + kb}, {"GET", "/v1/knowledge-bases/" + kb + "/documents"}}
		for _, rd := range reads {
			require.Equal(t, 200, a.do(rd[0], rd[1], a.membT, nil).status, rd[1])
		}
		require.Equal(t, 200, a.do("POST", "/v1/knowledge/search", a.membT, map[string]any{"query": "c"}).status)
		require.Equal(t, 200, a.do("POST", "/v1/knowledge-bases/"+kb+"/search", a.membT, map[string]any{"query": "c"}).status)
		writes := []struct {
			method, path string
			body         any
		}{
			{"POST", "/v1/knowledge/documents", map[string]any{"name": "n", "content": "c"}},
			{"PATCH", "/v1/knowledge/documents/" + id, map[string]any{"name": "m"}},
			{"DELETE", "/v1/knowledge/documents/" + id, nil},
			{"POST", "/v1/knowledge/documents/" + id + "/retry", nil},
			{"POST", "/v1/knowledge/documents/" + id + "/replace", nil},
			{"POST", "/v1/knowledge-bases", map[string]any{"name": "x"}},
			{"PATCH", "/v1/knowledge-bases/" + kb, map[string]any{"name": "x"}},
			{"DELETE", "/v1/knowledge-bases/" + kb, nil},
			{"POST", "/v1/knowledge-bases/" + kb + "/documents", map[string]any{"document_ids": []string{id}}},
			{"DELETE", "/v1/knowledge-bases/" + kb + "/documents/" + id, nil},
		}
		for _, w := range writes {
			require.Equal(t, 403, a.do(w.method, w.path, a.membT, w.body).status, "member token: %s %s", w.method, w.path)
		}
		require.Equal(t, 401, a.do("GET", "/v1/knowledge/documents", "", nil).status)
		// A secret key carries full access, whoever created it.
		require.Equal(t, 201, a.do("POST", "/v1/knowledge/documents", a.membK, map[string]any{"name": "n", "content": "by key"}).status)
		require.Equal(t, 200, a.do("PATCH", "/v1/knowledge/documents/"+id, a.membK, map[string]any{"name": "m"}).status)
	})
}

func TestKnowledgeBases(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db)
		r := a.do("POST", "/v1/knowledge-bases", a.adminK, map[string]any{"name": "Support", "description": "For the help line"})
		require.Equal(t, 201, r.status, string(r.body))
		kb := r.obj(t)
		id := kb["id"].(string)
		require.Equal(t, "Support", kb["name"])
		require.Equal(t, "For the help line", kb["description"])
		require.EqualValues(t, 0, kb["document_count"])
		require.Equal(t, 400, a.do("POST", "/v1/knowledge-bases", a.adminK, map[string]any{"name": ""}).status)
		require.Equal(t, 400, a.do("POST", "/v1/knowledge-bases", a.adminK, map[string]any{}).status)

		other := docs(t, a.do("POST", "/v1/knowledge/documents", a.adminK, map[string]any{"name": "outside", "content": "Kettles outside the base."}))[0]["id"].(string)
		inside := docs(t, a.do("POST", "/v1/knowledge/documents", a.adminK, map[string]any{"name": "inside", "content": "Kettles inside the base."}))[0]["id"].(string)
		r = a.do("POST", "/v1/knowledge-bases/"+id+"/documents", a.adminK, map[string]any{"document_ids": []string{inside}})
		require.Equal(t, 200, r.status, string(r.body))
		require.Equal(t, inside, docs(t, r)[0]["id"])
		r = a.upload("POST", "/v1/knowledge-bases/"+id+"/documents", a.adminK, file("kb.md", []byte("# Kettles\n\nKettles uploaded into the base.")))
		require.Equal(t, 201, r.status, string(r.body))
		uploaded := docs(t, r)[0]["id"].(string)
		require.Equal(t, 400, a.do("POST", "/v1/knowledge-bases/"+id+"/documents", a.adminK, map[string]any{"document_ids": []string{storage.NewUUID()}}).status)
		for _, d := range []string{other, inside, uploaded} {
			a.await(d)
		}

		l := a.do("GET", "/v1/knowledge-bases/"+id+"/documents", a.membK, nil).list(t)
		require.Len(t, l, 2)
		require.EqualValues(t, 2, a.do("GET", "/v1/knowledge-bases/"+id, a.membK, nil).obj(t)["document_count"])
		require.Len(t, a.do("GET", "/v1/knowledge-bases", a.membK, nil).list(t), 1)

		s := a.do("POST", "/v1/knowledge-bases/"+id+"/search", a.membK, map[string]any{"query": "kettles"}).obj(t)
		require.Len(t, s["results"], 2, "only the base's documents")
		s = a.do("POST", "/v1/knowledge/search", a.membK, map[string]any{"query": "kettles", "knowledge_base_ids": []string{id}}).obj(t)
		require.Len(t, s["results"], 2)
		require.Len(t, a.do("POST", "/v1/knowledge/search", a.membK, map[string]any{"query": "kettles"}).obj(t)["results"], 3)

		r = a.do("PATCH", "/v1/knowledge-bases/"+id+"/documents/"+inside, a.adminK, map[string]any{"name": "renamed"})
		require.Equal(t, 200, r.status)
		require.Equal(t, "renamed", r.obj(t)["name"])
		require.Equal(t, 404, a.do("PATCH", "/v1/knowledge-bases/"+id+"/documents/"+other, a.adminK, map[string]any{"name": "x"}).status, "not in the base")
		require.Equal(t, 400, a.do("POST", "/v1/knowledge-bases/"+id+"/documents/"+inside+"/retry", a.adminK, nil).status)
		require.Equal(t, 404, a.do("POST", "/v1/knowledge-bases/"+id+"/documents/"+other+"/retry", a.adminK, nil).status)

		require.Equal(t, 204, a.do("DELETE", "/v1/knowledge-bases/"+id+"/documents/"+inside, a.adminK, nil).status)
		require.Equal(t, 200, a.do("GET", "/v1/knowledge/documents/"+inside, a.membK, nil).status, "detaching keeps the document")
		require.Equal(t, 404, a.do("DELETE", "/v1/knowledge-bases/"+id+"/documents/"+inside, a.adminK, nil).status)

		r = a.do("PATCH", "/v1/knowledge-bases/"+id, a.adminK, map[string]any{"description": "new"})
		require.Equal(t, 200, r.status)
		require.Equal(t, "Support", r.obj(t)["name"])
		require.Equal(t, "new", r.obj(t)["description"])
		require.Equal(t, 204, a.do("DELETE", "/v1/knowledge-bases/"+id, a.adminK, nil).status)
		require.Equal(t, 200, a.do("GET", "/v1/knowledge/documents/"+uploaded, a.membK, nil).status, "deleting a base detaches, never deletes")
		require.Equal(t, 404, a.do("GET", "/v1/knowledge-bases/"+id, a.membK, nil).status)
		require.Equal(t, 404, a.do("POST", "/v1/knowledge-bases/"+id+"/search", a.membK, map[string]any{"query": "x"}).status)
		require.Equal(t, 404, a.do("GET", "/v1/knowledge-bases/"+id+"/documents", a.membK, nil).status)
	})
}

// TestIngestionResumes: a worker that dies mid-job (kill -9) leaves the
// document processing under a lease; when the lease runs out a live
// worker (here the server's own) takes the job over and finishes it.
func TestIngestionResumes(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db)
		ctx := context.Background()
		// A store write, not the API, so the live worker is not woken and the
		// dead worker can claim first. Should the live worker's poll win the
		// race, that document is ingested and another one is queued.
		var job storage.IngestJob
		for tries := 0; job.DocumentID == ""; tries++ {
			require.Less(t, tries, 5, "the dead worker never claimed a document first")
			created, err := a.store.Knowledge.CreateDocuments(ctx, a.org.ID, 0, []storage.KnowledgeDocument{{Name: "n", SourceType: "text", MimeType: "text/plain", Content: "Resumed text."}})
			require.NoError(t, err)
			for {
				j, ok, err := a.store.Knowledge.ClaimIngestion(ctx, "dead-worker", 300*time.Millisecond)
				require.NoError(t, err)
				if ok {
					require.Equal(t, created[0].ID, j.DocumentID)
					job = j
					break
				}
				if st, _ := a.store.Knowledge.Document(ctx, a.org.ID, created[0].ID); st.Status != storage.DocPending {
					break
				}
			}
		}
		d, _ := a.store.Knowledge.Document(ctx, a.org.ID, job.DocumentID)
		require.Equal(t, storage.DocProcessing, d.Status)
		got := a.await(job.DocumentID) // the server's worker polls every second
		require.Equal(t, "ready", got["status"])
		require.Equal(t, "Resumed text.", got["content"])
		require.ErrorIs(t, a.store.Knowledge.CompleteIngestion(ctx, job, "stale", nil), storage.ErrConflict, "the dead worker's late result is refused")
	})
}
