package gokastore

import "testing"

// TestFreshLevelDBStartsEmpty: what an earlier process left in the LevelDB files
// is gone when a partition is opened again; the table comes from the
// changelog only.
func TestFreshLevelDBStartsEmpty(t *testing.T) {
	b := FreshLevelDB(t.TempDir(), nil)
	st, err := b("g-table", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Open(); err != nil {
		t.Fatal(err)
	}
	if err := st.Set("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := st.SetOffset(41); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = b("g-table", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Open(); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ok, err := st.Has("k"); err != nil || ok {
		t.Fatalf("reopened storage has the old key: %v, %v", ok, err)
	}
	if off, err := st.GetOffset(-2); err != nil || off != -2 {
		t.Fatalf("reopened storage has offset %d (%v), want none (-2)", off, err)
	}
}
