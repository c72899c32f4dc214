package kvcache

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestSetAndGet(t *testing.T) {
	s := NewStore(0)
	s.Set("Products/42", "mug")
	if got := s.Get("products/42"); got != "mug" {
		t.Fatalf("Get = %q", got)
	}
	if got := s.Get("products/43"); got != "" {
		t.Fatalf("missing key: Get = %q", got)
	}
}

func TestEntriesExpire(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	s := NewStore(time.Minute)
	s.Now = clock.now
	s.Set("a", "1")
	clock.t = clock.t.Add(59 * time.Second)
	if got := s.Get("a"); got != "1" {
		t.Fatalf("before expiry: %q", got)
	}
	clock.t = clock.t.Add(time.Second)
	if got := s.Get("a"); got != "" {
		t.Fatalf("after expiry: %q", got)
	}
	if s.Len() != 0 {
		t.Fatalf("expired entry kept")
	}
}

func TestDelete(t *testing.T) {
	s := NewStore(0)
	s.Set("a", "1")
	s.Delete("A")
	if s.Get("a") != "" || s.Len() != 0 {
		t.Fatal("not deleted")
	}
}

func TestGetOrLoadLoadsOnce(t *testing.T) {
	loads := 0
	c := &Cache{Store: NewStore(0), Load: func(key string) (string, error) {
		loads++
		return "v:" + key, nil
	}}
	for i := 0; i < 3; i++ {
		if v, err := c.GetOrLoad("k"); err != nil || v != "v:k" {
			t.Fatalf("GetOrLoad = %q, %v", v, err)
		}
	}
	if loads != 1 {
		t.Fatalf("loaded %d times", loads)
	}
}

func TestGetOrLoadError(t *testing.T) {
	boom := errors.New("backend down")
	c := &Cache{Store: NewStore(0), Load: func(string) (string, error) { return "", boom }}
	if _, err := c.GetOrLoad("k"); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

func TestHandlerPutThenGet(t *testing.T) {
	h := Handler(NewStore(0))
	put := httptest.NewRecorder()
	h.ServeHTTP(put, httptest.NewRequest(http.MethodPut, "/kv/greeting", strings.NewReader("hello")))
	if put.Code != http.StatusNoContent {
		t.Fatalf("PUT: %d", put.Code)
	}
	get := httptest.NewRecorder()
	h.ServeHTTP(get, httptest.NewRequest(http.MethodGet, "/kv/greeting", nil))
	if get.Code != http.StatusOK || get.Body.String() != "hello" {
		t.Fatalf("GET: %d %q", get.Code, get.Body.String())
	}
	missing := httptest.NewRecorder()
	h.ServeHTTP(missing, httptest.NewRequest(http.MethodGet, "/kv/other", nil))
	if missing.Code != http.StatusNotFound {
		t.Fatalf("GET missing: %d", missing.Code)
	}
}
