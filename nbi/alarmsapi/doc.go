// Package alarmsapi is the O2IMS Infrastructure Monitoring API (alarms; reference:
// testdata/reference/o2ims-inventory/alarms) on the shared northbound listener: api_versions, the
// alarms (list with filter, attribute selectors and paging through the shell's one list pipeline, get,
// PATCH to acknowledge or to clear a manual-clearing alarm) and the alarm service configuration. The
// alarms are package alarms' own: raised and cleared there, stored in one ConfigMap.
package alarmsapi
