package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

func TestStoreErr(t *testing.T) {
	require.NoError(t, api.StoreErr(nil))
	require.Same(t, api.ErrNotFound, api.StoreErr(fmt.Errorf("get: %w", storage.ErrNotFound)))
	require.Same(t, api.ErrNotFound, api.StoreErr(storage.ErrNotMember))
	require.Same(t, api.ErrForbidden, api.StoreErr(storage.ErrRole))
	var e *api.Error
	require.ErrorAs(t, api.StoreErr(storage.ErrConflict), &e)
	require.Equal(t, http.StatusConflict, e.Status)
	other := errors.New("disk on fire")
	require.Same(t, other, api.StoreErr(other), "unknown errors pass through to the error handler")
}

func TestErrorBody(t *testing.T) {
	e := &api.Error{Status: 410, Detail: "gone", Extra: map[string]any{"new_path": "/v1/x"}}
	require.Equal(t, map[string]any{"detail": "gone", "new_path": "/v1/x"}, e.Body())
	require.Equal(t, map[string][]string{"name": {"bad"}}, api.FieldErr("name", "bad").Body())
}

func TestFields(t *testing.T) {
	f := api.Fields{}
	require.NoError(t, f.Err())
	blank, long, ok := " ", strings.Repeat("x", 5), " Acme "
	require.Equal(t, "Acme", f.Name("ok", &ok, true, 4))
	f.Name("missing", nil, true, 4)
	f.Name("optional", nil, false, 4)
	f.Name("blank", &blank, true, 4)
	f.Name("long", &long, true, 4)
	var e *api.Error
	require.ErrorAs(t, f.Err(), &e)
	require.Equal(t, http.StatusBadRequest, e.Status)
	require.Equal(t, map[string][]string{
		"missing": {"This field is required."},
		"blank":   {"This field may not be blank."},
		"long":    {"Ensure this field has no more than 4 characters."},
	}, e.Fields)
}

func TestOptID(t *testing.T) {
	body := map[string]json.RawMessage{"a": json.RawMessage(`7`), "b": json.RawMessage(`null`), "c": json.RawMessage(`-1`), "d": json.RawMessage(`"x"`)}
	f := api.Fields{}
	set, id := api.OptID(body, "a", f)
	require.True(t, set)
	require.Equal(t, int64(7), *id)
	set, id = api.OptID(body, "b", f)
	require.True(t, set)
	require.Nil(t, id)
	set, _ = api.OptID(body, "absent", f)
	require.False(t, set)
	api.OptID(body, "c", f)
	api.OptID(body, "d", f)
	require.Len(t, f, 2)
}

func TestSmallRules(t *testing.T) {
	require.Empty(t, api.OneOf("a", []string{"a", "b"}))
	require.Equal(t, `"c" is not a valid choice; use one of: a, b.`, api.OneOf("c", []string{"a", "b"}))
	require.Empty(t, api.TooLong("héllo", 5), "counts characters, not bytes")
	require.NotEmpty(t, api.TooLong("héllo!", 5))
	require.Equal(t, []int{}, api.NonNil[int](nil))
	require.Equal(t, "2026-01-02T03:04:05.006Z", api.TS(time.Date(2026, 1, 2, 4, 4, 5, 6e6, time.FixedZone("CET", 3600))))
	require.Nil(t, api.TSPtr(nil))
}

// TestDecode runs Decode inside a real handler, the way every route does.
func TestDecode(t *testing.T) {
	app := fiber.New()
	app.Post("/", func(c fiber.Ctx) error {
		var in struct {
			Name *string `json:"name"`
			N    int     `json:"n"`
		}
		if err := api.Decode(c, &in); err != nil {
			var e *api.Error
			if errors.As(err, &e) {
				return c.Status(e.Status).JSON(e.Body())
			}
			return err
		}
		return c.SendStatus(http.StatusNoContent)
	})
	cases := []struct {
		body   string
		status int
		want   string
	}{
		{`{"name": "x", "unknown": 1}`, 204, ""},
		{``, 400, "Request body must be a JSON object."},
		{`[1]`, 400, "Request body must be a JSON object."},
		{`{"n": "seven"}`, 400, `{"n":["Must be an integer."]}`},
		{`{"name": }`, 400, "Malformed JSON at byte"},
		{`{"name": "x"} {}`, 400, "unexpected data after the object"},
	}
	for _, tc := range cases {
		res, err := app.Test(httptest.NewRequest("POST", "/", strings.NewReader(tc.body)))
		require.NoError(t, err)
		b := make([]byte, 512)
		n, _ := res.Body.Read(b)
		require.Equal(t, tc.status, res.StatusCode, tc.body)
		require.Contains(t, string(b[:n]), tc.want, tc.body)
	}
}
