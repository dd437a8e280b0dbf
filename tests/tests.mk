# SPDX-License-Identifier: MIT
# tests/: each test family adds its own fragment.
-include $(wildcard tests/*/*.mk)
