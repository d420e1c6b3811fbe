# What usually answers at an I2C address (i2c_scan's answer): the common breakout
# boards' parts. Loaded for a scan and dropped.
NAMES = {
    0x0D: "QMC5883L compass", 0x1D: "ADXL345 accelerometer", 0x1E: "HMC5883L compass",
    0x20: "PCF8574/MCP23017 I/O expander", 0x23: "BH1750 light (bh1750)",
    0x27: "PCF8574 LCD backpack", 0x29: "VL53L0X distance / TSL2591 light",
    0x38: "AHT10/AHT20 temperature and humidity (aht20)", 0x39: "APDS9960 / TSL2561 light",
    0x3C: "SSD1306/SH1106 OLED display", 0x3D: "SSD1306 OLED display",
    0x3F: "PCF8574A LCD backpack", 0x40: "INA219 current / HTU21D / Si7021 humidity",
    0x44: "SHT3x/SHT4x temperature and humidity (sht3x)", 0x45: "SHT3x temperature and humidity (sht3x)",
    0x48: "ADS1115 ADC / TMP102 temperature", 0x49: "ADS1115 ADC", 0x50: "AT24C EEPROM",
    0x53: "ADXL345 accelerometer", 0x57: "AT24C32 EEPROM (DS3231 module)",
    0x5A: "MLX90614 IR thermometer / CCS811 air quality", 0x5B: "CCS811 air quality",
    0x5C: "BH1750 light, ADDR high (bh1750) / AM2320", 0x61: "SCD30 CO2",
    0x62: "SCD40/SCD41 CO2", 0x68: "MPU6050 IMU / DS3231 / DS1307 clock", 0x69: "MPU6050 IMU",
    0x70: "TCA9548A I2C mux / SHTC3 humidity", 0x76: "BME280/BMP280 weather (bme280)",
    0x77: "BME280/BMP280/BME680 weather (bme280)",
}


def describe(bus, found, mine):
    """The scan's answer: each address, what it usually is, and the device it already is."""
    parts = []
    for a in found:
        what = NAMES.get(a, "unknown part")
        parts.append("0x%02x %s%s" % (a, what, ": device " + mine[a] if a in mine else ""))
    new = [a for a in found if a not in mine]
    return "I2C on %s, %d answering: %s.%s" % (
        bus, len(found), "; ".join(parts),
        " Add a part with device_add (its type in brackets); read or write one without a type "
        "with i2c_io." if new else "")
