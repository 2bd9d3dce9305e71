package config

import (
	"testing"

	"github.com/relayq/relayq/delivery/smtpclient"
	"github.com/relayq/relayq/delivery/tlspolicy"
)

// config may not import the delivery packages, so it spells the values of
// delivery.tls, delivery.smarthost.tls and delivery.mta_sts itself;
// cmd/relayq converts them with smtpclient.TLSMode(…) and friends, which
// is right only while the spellings agree.
func TestValuesMatchDeliveryConstants(t *testing.T) {
	for _, v := range [][2]string{
		{DeliveryTLSOpportunistic, string(smtpclient.TLSOpportunistic)},
		{DeliveryTLSRequired, string(smtpclient.TLSRequired)},
		{DeliveryTLSNone, string(smtpclient.TLSNone)},
		{SmarthostTLSNone, string(smtpclient.SmarthostNoTLS)},
		{SmarthostTLSStartTLS, string(smtpclient.SmarthostSTARTTLS)},
		{SmarthostTLSImplicit, string(smtpclient.SmarthostImplicit)},
		{MTASTSEnforce, string(tlspolicy.MTASTSEnforce)},
		{MTASTSTesting, string(tlspolicy.MTASTSTesting)},
		{MTASTSOff, string(tlspolicy.MTASTSOff)},
	} {
		if v[0] != v[1] {
			t.Errorf("config says %q where delivery says %q", v[0], v[1])
		}
	}
}
