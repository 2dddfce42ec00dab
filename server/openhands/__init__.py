"""OpenHands agents (``kind: openhands``): the Sans-I/O side taskwire runs (``protocol``, the
driver's reports; ``dispatch``, what each means as taskwire events) and the driver itself
(``driver.py``, ``driver_channel.py``), which runs in OpenHands' own venv and never imports
taskwire. ``taskwire/runtime/backends/openhands.py`` drives them for one conversation."""
