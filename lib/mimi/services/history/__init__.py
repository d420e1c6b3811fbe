# Sensor history: store.py keeps readings on flash, query.py sums them up, chart.py
# draws them (png.py, font.py). Nothing is imported here: each is loaded when used.
