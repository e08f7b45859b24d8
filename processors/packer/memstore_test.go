package packer

import "testing"

func TestMemStore(t *testing.T) {
	m := memStoreBuilder()
	s, err := m("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"b", "a|2", "a|1", "c"} {
		if err := s.Set(k, []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Set("x", nil); err == nil {
		t.Error("nil value accepted")
	}
	if err := s.Delete("c"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Has("c"); ok {
		t.Error("deleted key still there")
	}
	if v, _ := s.Get("b"); string(v) != "vb" {
		t.Errorf("Get(b) = %q", v)
	}
	if off, _ := s.GetOffset(-2); off != -2 {
		t.Errorf("offset before SetOffset = %d", off)
	}
	_ = s.SetOffset(7)
	if off, _ := s.GetOffset(-2); off != 7 {
		t.Errorf("offset = %d", off)
	}
	it, _ := s.Iterator()
	_ = s.Set("0", []byte("later")) // not in the snapshot
	var got []string
	for it.Next() {
		v, _ := it.Value()
		got = append(got, string(it.Key())+"="+string(v))
	}
	if want := "[a|1=va|1 a|2=va|2 b=vb]"; fmtList(got) != want {
		t.Errorf("iterator = %v, want %s", got, want)
	}
	it, _ = s.IteratorWithRange([]byte("a|"), nil)
	got = nil
	for it.Next() {
		got = append(got, string(it.Key()))
	}
	if want := "[a|1 a|2]"; fmtList(got) != want {
		t.Errorf("range iterator = %v, want %s", got, want)
	}
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
