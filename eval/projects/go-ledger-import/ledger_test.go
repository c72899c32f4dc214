package ledger

import (
	"strings"
	"testing"
)

const export = `date,description,amount
2024-03-01,Coffee beans,-18.40
2024-03-02,Invoice 1042,1250.00

2024-03-02,Rent,-800
2024-03-05,Refund,+3.5
`

func TestParseTransactions(t *testing.T) {
	txs, err := ParseTransactions(strings.NewReader(export))
	if err != nil {
		t.Fatal(err)
	}
	if len(txs) != 4 {
		t.Fatalf("got %d transactions", len(txs))
	}
	if txs[0].Description != "Coffee beans" || txs[0].Cents != -1840 || txs[0].Date.Day() != 1 {
		t.Fatalf("first: %+v", txs[0])
	}
	if txs[3].Cents != 350 {
		t.Fatalf("refund: %d", txs[3].Cents)
	}
}

func TestSummarize(t *testing.T) {
	txs, _ := ParseTransactions(strings.NewReader(export))
	s := Summarize(txs)
	if s.Count != 4 || s.In != 125350 || s.Out != -81840 || s.Net != 43510 || s.Largest != "Rent" {
		t.Fatalf("%+v", s)
	}
}

func TestByDay(t *testing.T) {
	txs, _ := ParseTransactions(strings.NewReader(export))
	days, by := ByDay(txs)
	if strings.Join(days, " ") != "2024-03-01 2024-03-02 2024-03-05" || len(by["2024-03-02"]) != 2 {
		t.Fatalf("%v", days)
	}
}

func TestParseAmount(t *testing.T) {
	for in, want := range map[string]int64{"12.34": 1234, "-5": -500, "0.5": 50, "+1.05": 105} {
		if got, err := ParseAmount(in); err != nil || got != want {
			t.Errorf("ParseAmount(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "12,50", "1.234", "abc", "1.", "--1"} {
		if _, err := ParseAmount(bad); err == nil {
			t.Errorf("ParseAmount(%q) accepted", bad)
		}
	}
}

func TestFormatAmount(t *testing.T) {
	if FormatAmount(-5) != "-0.05" || FormatAmount(125000) != "1250.00" {
		t.Fatal(FormatAmount(-5), FormatAmount(125000))
	}
}
