"""The DeviceRegistry aggregate: paired devices and their hashed tokens; domain layer."""
