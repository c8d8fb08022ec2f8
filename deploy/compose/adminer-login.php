<?php
// Adminer plugin for compose.yaml (mounted into plugins-enabled/): the login
// form offers the compose Postgres alone, with PostgreSQL preselected. The
// official image's ADMINER_DEFAULT_SERVER only fills in the server name and
// leaves the driver on MySQL. Uses Adminer's bundled login-servers plugin.
require_once 'plugins/login-servers.php';

return new AdminerLoginServers([
	'postgres' => ['server' => 'postgres', 'driver' => 'pgsql'],
]);
