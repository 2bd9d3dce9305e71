package admin

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/relayq/relayq/queue"
)

// TLSReport is an RFC 8460 (SMTP TLS Reporting) aggregate report, section
// 4.4, for one recipient domain and one UTC day.
type TLSReport struct {
	OrganizationName string          `json:"organization-name"`
	DateRange        TLSReportRange  `json:"date-range"`
	ContactInfo      string          `json:"contact-info"`
	ReportID         string          `json:"report-id"`
	Policies         []TLSReportItem `json:"policies"`
}

// TLSReportRange is the report's date-range.
type TLSReportRange struct {
	Start string `json:"start-datetime"`
	End   string `json:"end-datetime"`
}

// TLSReportItem is one policy's entry in "policies".
type TLSReportItem struct {
	Policy         TLSReportPolicy    `json:"policy"`
	Summary        TLSReportSummary   `json:"summary"`
	FailureDetails []TLSFailureDetail `json:"failure-details,omitempty"`
}

// TLSReportPolicy says which policy applied ("sts", "tlsa", or
// "no-policy-found" for opportunistic STARTTLS that failed).
type TLSReportPolicy struct {
	Type   string   `json:"policy-type"`
	Domain string   `json:"policy-domain"`
	MXHost []string `json:"mx-host,omitempty"`
}

// TLSReportSummary counts sessions.
type TLSReportSummary struct {
	Successful int64 `json:"total-successful-session-count"`
	Failed     int64 `json:"total-failure-session-count"`
}

// TLSFailureDetail counts one kind of failure at one MX.
type TLSFailureDetail struct {
	ResultType  string `json:"result-type"`
	ReceivingMX string `json:"receiving-mx-hostname,omitempty"`
	Failed      int64  `json:"failed-session-count"`
}

// tlsReport serves GET /api/v1/tls-report?domain=D&day=YYYY-MM-DD.
func (h *handler) tlsReport(w http.ResponseWriter, r *http.Request) {
	st := h.store(w)
	if st == nil {
		return
	}
	domain := strings.ToLower(strings.TrimSuffix(r.URL.Query().Get("domain"), "."))
	if domain == "" || strings.ContainsAny(domain, " /\x00") {
		writeError(w, http.StatusBadRequest, "domain: want a domain name, e.g. ?domain=example.com&day=2026-11-30")
		return
	}
	day, err := time.Parse(time.DateOnly, r.URL.Query().Get("day"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "day: want YYYY-MM-DD (UTC)")
		return
	}
	counts, err := st.TLS().Day(domain, day)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, buildTLSReport(h.o.ReportOrg, domain, day, counts))
}

// buildTLSReport groups a day's counts by policy type.
func buildTLSReport(org, domain string, day time.Time, counts []queue.TLSCount) TLSReport {
	if org == "" {
		org = "relayq"
	}
	rep := TLSReport{
		OrganizationName: org,
		DateRange:        TLSReportRange{Start: day.Format("2006-01-02") + "T00:00:00Z", End: day.Format("2006-01-02") + "T23:59:59Z"},
		ContactInfo:      "postmaster@" + org,
		ReportID:         day.Format("2006-01-02") + "_" + domain + "@" + org,
		Policies:         []TLSReportItem{},
	}
	index := map[string]int{}
	for _, c := range counts {
		i, ok := index[c.Policy]
		if !ok {
			i = len(rep.Policies)
			index[c.Policy] = i
			rep.Policies = append(rep.Policies, TLSReportItem{Policy: TLSReportPolicy{Type: c.Policy, Domain: domain}})
		}
		item := &rep.Policies[i]
		if c.MX != "" && !slices.Contains(item.Policy.MXHost, c.MX) {
			item.Policy.MXHost = append(item.Policy.MXHost, c.MX)
		}
		if c.Failure == "" {
			item.Summary.Successful += c.N
			continue
		}
		item.Summary.Failed += c.N
		item.FailureDetails = append(item.FailureDetails, TLSFailureDetail{ResultType: c.Failure, ReceivingMX: c.MX, Failed: c.N})
	}
	return rep
}
