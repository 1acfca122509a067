package knowledge

import (
	"archive/zip"
	"bytes"
	"fmt"
	"strings"
)

// PDFDoc builds a minimal PDF whose pages show the given lines in
// Helvetica; no page text gives a PDF without extractable text. With
// encrypted set, the trailer names a standard security handler whose user
// password is not empty, as a password-protected PDF does.
func PDFDoc(encrypted bool, pages ...[]string) []byte {
	var objs []string
	n := len(pages)
	// 1 catalog, 2 pages, 3 font, then per page: page object, content stream.
	kids := make([]string, n)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs = append(objs, "<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, lines := range pages {
		var cs strings.Builder
		if len(lines) > 0 {
			cs.WriteString("BT /F1 12 Tf 72 720 Td 14 TL\n")
			for _, l := range lines {
				fmt.Fprintf(&cs, "(%s) Tj T*\n", l)
			}
			cs.WriteString("ET")
		}
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i),
			fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", cs.Len(), cs.String()))
	}
	encRef := ""
	if encrypted {
		objs = append(objs, "<< /Filter /Standard /V 1 /R 2 /O <"+strings.Repeat("ab", 32)+"> /U <"+strings.Repeat("cd", 32)+"> /P -44 >>")
		encRef = fmt.Sprintf(" /Encrypt %d 0 R /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>]", len(objs))
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, encRef, xref)
	return b.Bytes()
}

// DocxDoc builds a Word document: paragraphs whose text starts with "#"
// are Heading1.
func DocxDoc(paras ...string) []byte {
	var body strings.Builder
	for _, p := range paras {
		style := ""
		if strings.HasPrefix(p, "#") {
			p, style = strings.TrimSpace(strings.TrimLeft(p, "#")), `<w:pPr><w:pStyle w:val="Heading1"/></w:pPr>`
		}
		fmt.Fprintf(&body, `<w:p>%s<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, style, p)
	}
	return ZipOf(map[string][]byte{
		"[Content_Types].xml": []byte(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`),
		"word/document.xml":   []byte(`<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`),
	})
}

// ZipBomb is a .docx whose document.xml inflates a thousandfold.
func ZipBomb() []byte {
	return ZipOf(map[string][]byte{
		"[Content_Types].xml": []byte(`<Types/>`),
		"word/document.xml":   bytes.Repeat([]byte(" "), 20<<20),
	})
}

func ZipOf(files map[string][]byte) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, data := range files {
		w, _ := zw.Create(name)
		w.Write(data)
	}
	zw.Close()
	return b.Bytes()
}

// The Google Drive types of Docs and Sheets, for the import tests.
const (
	MimeGoogleDoc   = "application/vnd.google-apps.document"
	MimeGoogleSheet = "application/vnd.google-apps.spreadsheet"
)
