package proto

import (
	"testing"
)

func cmaBody(c Cma) []byte {
	b := make([]byte, HeaderLen+CmaLen)
	c.Put(b)
	return b[HeaderLen:]
}

func TestCma(t *testing.T) {
	good := Cma{Msg: MsgHeader{Dst: 1, Src: 2, Ctx: 3, Tag: 4, Seq: 5, Total: 1 << 20}, Pid: 42, Addr: 0xc000100000,
		Ident: 0x7f0000000050, Token: 7}
	b := make([]byte, HeaderLen+CmaLen)
	good.Put(b)
	if typ, n, err := ParseHeader(b, CmaLen); err != nil || typ != TypeCma || n != CmaLen {
		t.Fatalf("header: %d %d %v", typ, n, err)
	}
	if got, err := DecodeCma(b[HeaderLen:]); err != nil || got != good {
		t.Fatalf("decoded %+v %v, want %+v", got, err, good)
	}
	bad := map[string]func(c *Cma){
		"empty message":      func(c *Cma) { c.Msg.Total = 0 },
		"huge message":       func(c *Cma) { c.Msg.Total = 1 << 63 },
		"at an offset":       func(c *Cma) { c.Msg.Offset = 1 },
		"negative tag":       func(c *Cma) { c.Msg.Tag = -1 },
		"pid 0":              func(c *Cma) { c.Pid = 0 },
		"pid too large":      func(c *Cma) { c.Pid = 1 << 30 },
		"null address":       func(c *Cma) { c.Addr = 0 },
		"kernel address":     func(c *Cma) { c.Addr = 0xffff800000000000 },
		"wraps":              func(c *Cma) { c.Addr = maxAddr - 10 },
		"unaligned identity": func(c *Cma) { c.Ident = 0x7f0000000051 },
		"null identity":      func(c *Cma) { c.Ident = 0 },
		"token 0":            func(c *Cma) { c.Token = 0 },
	}
	for name, f := range bad {
		c := good
		f(&c)
		if got, err := DecodeCma(cmaBody(c)); err == nil {
			t.Errorf("%s: decoded %+v", name, got)
		}
	}
	if _, err := DecodeCma(cmaBody(good)[1:]); err == nil {
		t.Error("short body decoded")
	}
}

// FuzzDecodeCma: the decoder never panics, and what it accepts re-encodes
// to the same bytes and respects the bounds the reader relies on.
func FuzzDecodeCma(f *testing.F) {
	f.Add(cmaBody(Cma{Msg: MsgHeader{Dst: 1, Total: 1 << 20}, Pid: 9, Addr: 4096, Ident: 8, Token: 1}))
	f.Add(make([]byte, CmaLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCma(b)
		if err != nil {
			return
		}
		if c.Msg.Total == 0 || c.Msg.Offset != 0 || c.Addr+c.Msg.Total > maxAddr || c.Pid == 0 || c.Token == 0 {
			t.Fatalf("accepted %+v", c)
		}
		if g := cmaBody(c); string(g) != string(b) {
			t.Fatalf("re-encoded %x, was %x", g, b)
		}
	})
}
