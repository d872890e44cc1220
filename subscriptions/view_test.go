package subscriptions

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// emptyNetBox answers every inventory listing with nothing: a NetBox whose pool holds no device.
type emptyNetBox struct{}

func (emptyNetBox) ListInventoryDevices(context.Context, time.Time, bool) ([]netbox.InventoryDevice, error) {
	return nil, nil
}

func (emptyNetBox) ListInventorySites(context.Context, time.Time) ([]netbox.InventorySite, error) {
	return nil, nil
}

func (emptyNetBox) ListInventoryDeviceTypes(context.Context, time.Time) ([]netbox.InventoryDeviceType, error) {
	return nil, nil
}

// syncedView is an empty view that has applied one full listing, as the notifier waits for: the
// tests feed changes to the notifier's sink themselves.
func syncedView(tb testing.TB) *inventory.View {
	tb.Helper()
	view := inventory.NewView(inventory.Config{}, nil)
	r, err := inventory.NewRefresher(view, emptyNetBox{}, nil, nil)
	require.NoError(tb, err)
	require.NoError(tb, r.Refresh(context.Background(), true))
	require.True(tb, view.IsSynced())
	return view
}
