package ledger

import (
	"strings"
	"testing"
)

func parseErr(t *testing.T, input string) error {
	t.Helper()
	txs, err := ParseTransactions(strings.NewReader(input))
	if err == nil {
		t.Fatalf("accepted a bad export, got %+v", txs)
	}
	return err
}

func TestValidExportStillParses(t *testing.T) {
	txs, err := ParseTransactions(strings.NewReader("date,description,amount\n2024-03-01, Coffee ,-18.40\n"))
	if err != nil || len(txs) != 1 || txs[0].Cents != -1840 || txs[0].Description != "Coffee" {
		t.Fatalf("%+v %v", txs, err)
	}
}

func TestRejectsBadAmountWithLineNumber(t *testing.T) {
	err := parseErr(t, "date,description,amount\n2024-03-01,Coffee,-18.40\n2024-03-02,Lunch,12;50\n")
	if !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("error does not name line 3: %v", err)
	}
}

func TestRejectsEmptyAmount(t *testing.T) {
	err := parseErr(t, "date,description,amount\n2024-03-01,Coffee,\n")
	if !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error does not name line 2: %v", err)
	}
}

func TestRejectsBadDate(t *testing.T) {
	err := parseErr(t, "date,description,amount\n03/01/2024,Coffee,-18.40\n")
	if !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error does not name line 2: %v", err)
	}
}

func TestRejectsShortRow(t *testing.T) {
	err := parseErr(t, "date,description,amount\n2024-03-01,Coffee,-18.40\n\n2024-03-04 Rent -800\n")
	if !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("error does not name line 4: %v", err)
	}
}
