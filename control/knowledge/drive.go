package knowledge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/ai"
	"github.com/voiced/voiced/ai/drive"
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// DriveFiles reads Google Drive files (*drive.Client).
type DriveFiles interface {
	Get(ctx context.Context, token, id string) (drive.File, error)
	Export(ctx context.Context, token, id, mimeType string) (io.ReadCloser, error)
	Download(ctx context.Context, token, id string) (io.ReadCloser, error)
}

// driveInput is POST /v1/knowledge/documents/import-drive: the files a
// Google Picker returned and the user's short-lived access token.
type driveInput struct {
	AccessToken *string         `json:"access_token"`
	Files       []driveFileItem `json:"files"`
}

type driveFileItem struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	MimeType string `json:"mimeType"`
}

// driveType is how a Drive file becomes a document: the MIME type it is
// stored as, and for Google Docs and Sheets the export format.
func driveType(mimeType string) (stored string, export bool) {
	switch mimeType {
	case drive.MimeDoc:
		return mimeText, true
	case drive.MimeSheet:
		return mimeCSV, true
	case "text/x-markdown":
		return mimeMarkdown, false
	case mimeText, mimeMarkdown, mimeCSV, mimePDF, mimeDOCX:
		return mimeType, false
	}
	return "", false
}

// Drive errors that are the provider's, not the request's.
var (
	errDriveDown    = api.Err(http.StatusBadGateway, "Google Drive could not be reached or failed; try again.")
	errDriveLimited = api.Err(http.StatusServiceUnavailable, "Google Drive is limiting requests right now; try again shortly.")
)

// driveFileTimeout bounds fetching one file (50 MB at 1 MB/s, with room).
const driveFileTimeout = 2 * time.Minute

// driveImporter serves import-drive for s with files.
type driveImporter struct {
	s     *Service
	files DriveFiles
}

// importDrive imports Google Drive files: each is looked up (files.get,
// whose type is trusted over the request's mimeType), exported (Docs as
// text, Sheets as CSV) or downloaded, spooled through its type's limit
// and checked exactly as an upload is; only when every file passed are
// the documents created, with source_origin google_drive.
func (d driveImporter) importDrive(c fiber.Ctx, p *storage.Principal) error {
	s := d.s
	if err := canWrite(p); err != nil {
		return err
	}
	var in driveInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	token := f.Name("access_token", in.AccessToken, true, 4096)
	switch {
	case len(in.Files) == 0:
		f.Add("files", "Choose at least one file.")
	case len(in.Files) > s.cfg.Limits.Files:
		f.Add("files", fmt.Sprintf("At most %d files may be imported at once.", s.cfg.Limits.Files))
	}
	for _, it := range in.Files {
		if it.ID == "" || len(it.ID) > 256 || strings.ContainsAny(it.ID, "/?#%\\ ") {
			f.Add("files", fmt.Sprintf("%q: each file needs its Google Drive id.", it.Name))
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	dir, err := s.blobs.spoolDir()
	if err != nil {
		return err
	}
	ctx := c.Context()
	var ups []*upload
	defer func() { discard(ups) }()
	var total int64
	for _, it := range in.Files {
		u, n, err := fetchDrive(ctx, d.files, s.cfg.Limits, token, it, dir, f)
		if u != nil {
			ups = append(ups, u)
		}
		if err != nil {
			return err
		}
		if total += n; total > s.cfg.Limits.Request {
			return errTooLarge
		}
	}
	for _, u := range ups {
		check(u, s.cfg.Limits, f)
	}
	if err := f.Err(); err != nil {
		return err
	}
	var docs []storage.KnowledgeDocument
	var kept []string
	for _, u := range ups {
		d, err := s.keep(p.OrgID, u)
		if err != nil {
			s.drop(kept)
			return err
		}
		d.SourceOrigin = "google_drive"
		kept = append(kept, d.OriginalKey)
		docs = append(docs, d)
	}
	created, warnings, err := s.create(ctx, p, docs, kept)
	if err != nil {
		return err
	}
	out := make([]detailView, len(created))
	for i, doc := range created {
		out[i] = s.viewDetail(doc)
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"documents": out, "warnings": warnings})
}

// fetchDrive spools one Drive file. Problems with the file are added to
// f (and u, if any, is returned for cleanup); problems with the token or
// with Drive itself are returned.
func fetchDrive(ctx context.Context, df DriveFiles, lim Limits, token string, it driveFileItem, dir string, f api.Fields) (*upload, int64, error) {
	label := it.Name
	if label == "" {
		label = it.ID
	}
	meta, err := df.Get(ctx, token, it.ID)
	if err != nil {
		return nil, 0, driveErr(err, label, f)
	}
	name := cleanName(it.Name)
	if name == "" {
		name = cleanName(meta.Name)
	}
	if name == "" {
		name = it.ID
	}
	stored, export := driveType(meta.MimeType)
	if stored == "" {
		f.Add("files", fmt.Sprintf("%q: unsupported Google Drive file type %s; import Google Docs, Google Sheets, or .txt, .md, .csv, .pdf or .docx files.", name, meta.MimeType))
		return nil, 0, nil
	}
	if typeByExt[strings.ToLower(path.Ext(name))] != stored {
		name += extByType[stored]
	}
	u := &upload{field: "files", filename: name, mime: stored}
	if max := lim.forType(stored); meta.Size > max {
		f.Add("files", fmt.Sprintf("%q is larger than the %s limit for %s files.", name, sizeText(max), strings.TrimPrefix(extByType[stored], ".")))
		return nil, 0, nil
	}
	// A file's bytes must arrive within driveFileTimeout: a stalled Drive
	// must not hold the request open.
	ctx, cancel := context.WithTimeout(ctx, driveFileTimeout)
	defer cancel()
	var body io.ReadCloser
	if export {
		body, err = df.Export(ctx, token, it.ID, stored)
	} else {
		body, err = df.Download(ctx, token, it.ID)
	}
	if err != nil {
		return nil, 0, driveErr(err, name, f)
	}
	defer body.Close()
	n, err := spool(u, body, dir, lim, f)
	if errors.Is(err, errInterrupted) {
		return u, n, errDriveDown // Drive broke off mid-file
	}
	return u, n, err
}

// driveErr maps a Drive error: a refused token is the request's fault
// (400 on access_token: the client holds it and must sign in again); a
// missing file or one too large to export is the file's (400 naming it,
// collected in f); Drive's own failures are 502, its rate limits 503.
func driveErr(err error, name string, f api.Fields) error {
	switch {
	case errors.Is(err, drive.ErrNotFound):
		f.Add("files", fmt.Sprintf("%q was not found in Google Drive, or is not shared with the signed-in account.", name))
		return nil
	case errors.Is(err, drive.ErrTooLarge):
		f.Add("files", fmt.Sprintf("%q is too large for Google Drive to export.", name))
		return nil
	case errors.Is(err, ai.ErrRateLimited):
		return errDriveLimited
	case errors.Is(err, ai.ErrUnauthorized):
		return api.FieldErr("access_token", "Google Drive refused this access token, or it cannot read the chosen files; sign in to Google Drive again.")
	}
	return errDriveDown
}
