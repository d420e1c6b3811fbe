# One driver per part family; each module's make(device) returns the driver of the
# device's type (mimi/devices/table.py says what a driver is).
