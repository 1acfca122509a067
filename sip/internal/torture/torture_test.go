package torture

import (
	"bytes"
	"path/filepath"
	"testing"
)

func TestDecode(t *testing.T) {
	got, err := Decode("A<hex>00 7F</hex>B\n<allOneLine>\nx<repeat count=3>ab</repeat>\n y<hex>20</hex>\n</allOneLine>\n\n")
	if err == nil {
		t.Fatalf("hex with a space decoded: %q", got)
	}
	got, err = Decode("A<hex>007F</hex>B<C\n<allOneLine>\nx<repeat count=3>ab</repeat>\n y<hex>20</hex>\n</allOneLine>\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "A\x00\x7fB<C\r\nxababab y \r\n\r\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestMessages: every file decodes; the sizes RFC 4475 states hold.
func TestMessages(t *testing.T) {
	files, err := filepath.Glob("../../testdata/rfc4475/*.txt")
	if err != nil || len(files) < 49 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		name = name[:len(name)-len(".txt")]
		msg, err := Load("../../testdata/rfc4475", name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.HasSuffix(msg, []byte("\r\n")) {
			t.Errorf("%s does not end in CRLF", name)
		}
	}
	// longreq is over the UDP MTU on purpose; intmeth's To holds NUL.
	if msg, _ := Load("../../testdata/rfc4475", "longreq"); len(msg) != 3515 {
		t.Errorf("longreq is %d octets, RFC 4475's is 3515", len(msg))
	}
	if msg, _ := Load("../../testdata/rfc4475", "intmeth"); !bytes.Contains(msg, []byte("NUL:\\\x00 DEL:\\\x7f\"")) {
		t.Errorf("intmeth's To lost its control characters")
	}
}
