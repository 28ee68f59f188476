#!/usr/bin/env bash
# Prints the README's Nth `sh setup` block (1: start the service, 2: run the tests), so CI
# runs the set-up commands exactly as the README gives them. Runs before `npm ci`: no node.
awk -v n="$1" '/^```sh setup$/{k++; if(k==n){f=1; next}} f&&/^```/{exit} f' "$(dirname "$0")/../README.md"
