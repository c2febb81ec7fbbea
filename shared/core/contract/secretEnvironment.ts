/**
 * A task environment variable whose value is a registry secret: the orchestration names the app setting (its
 * history is stored), the activity that adds the task reads the value (shared/adapters/config registryCredentials), and only
 * for the server the setting is declared for.
 */
export interface SecretEnvironmentRef {
  name: string;
  server: string;
  setting: string;
}
