package numbers_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/numbers"
)

func TestParseDIDPool(t *testing.T) {
	in := `# operator pool
number,area_code,city,state
+14155550100,,San Francisco,ca
+442071234567,,London
+12125550100, 212 , "New York, Manhattan", NY

`
	p, err := numbers.ParseDIDPool(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, []numbers.DID{
		{Number: "+14155550100", AreaCode: "415", City: "San Francisco", State: "CA"},
		{Number: "+442071234567", City: "London"},
		{Number: "+12125550100", AreaCode: "212", City: "New York, Manhattan", State: "NY"},
	}, p)
	for _, bad := range []string{"4155550100", "+14155550100,41", "+14155550100,,SF,California", "+14155550100\n+14155550100", "+1,2,3,4,5"} {
		_, err := numbers.ParseDIDPool(strings.NewReader(bad))
		require.Error(t, err, bad)
	}
}
