// Azure deployment of the HPC MPI control plane.
// Not compiled or deployed from this repository's CI (no Bicep compiler or Azure access there); see infra/README.md.
targetScope = 'resourceGroup'

@description('Short prefix for resource names (lowercase letters and digits).')
@minLength(3)
@maxLength(11)
param prefix string

param location string = resourceGroup().location

@description('How many staging storage accounts shards are spread over (each gives its own egress limit).')
@minValue(1)
@maxValue(20)
param stagingAccountCount int = 4

@description('Polling of Batch by the orchestrator (durable timers): first and longest interval.')
param pollInitialMs int = 5000
param pollMaxMs int = 60000

var suffix = uniqueString(resourceGroup().id)
var hostStorageName = toLower('${prefix}host${take(suffix, 8)}')
var batchName = toLower('${prefix}batch${take(suffix, 6)}')
var acrName = toLower('${prefix}acr${take(suffix, 8)}')

// Built-in role definition ids (documented, stable across tenants).
var roles = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageBlobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
  storageBlobDelegator: 'db58b8e5-c6ad-4a2a-8342-4190687cbf4a'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  acrPull: '7f951dda-4ed3-4680-a7ca-43fe172d538d'
  // Batch honours ARM Contributor on the account for data-plane calls made with an AAD token.
  contributor: 'b24988ac-6180-42a0-ab88-20f7382dd24c'
}

resource appIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${prefix}-app-id'
  location: location
}

resource hostStorage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: hostStorageName
  location: location
  sku: { name: 'Standard_LRS' }
  kind: 'StorageV2'
  properties: {
    allowSharedKeyAccess: false // the app uses its managed identity; no keys in settings
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}

resource staging 'Microsoft.Storage/storageAccounts@2023-05-01' = [for i in range(0, stagingAccountCount): {
  name: toLower('${prefix}stg${i}${take(suffix, 6)}')
  location: location
  sku: { name: 'Standard_LRS' }
  kind: 'StorageV2'
  properties: {
    allowSharedKeyAccess: false // nodes read shards through user-delegation SAS minted per job
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}]

resource batch 'Microsoft.Batch/batchAccounts@2024-02-01' = {
  name: batchName
  location: location
  properties: {
    poolAllocationMode: 'BatchService'
    allowedAuthenticationModes: [ 'AAD' ] // no shared keys: the app authenticates with its identity
  }
}

resource acr 'Microsoft.ContainerRegistry/registries@2023-07-01' = {
  name: acrName
  location: location
  sku: { name: 'Premium' } // Premium: higher concurrent pull limits; pulls are still staggered to at most 10 nodes
  properties: { adminUserEnabled: false }
}

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: '${prefix}-logs'
  location: location
  properties: { sku: { name: 'PerGB2018' }, retentionInDays: 30 }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: '${prefix}-ai'
  location: location
  kind: 'web'
  properties: { Application_Type: 'web', WorkspaceResourceId: logs.id }
}

resource plan 'Microsoft.Web/serverfarms@2023-12-01' = {
  name: '${prefix}-plan'
  location: location
  sku: { name: 'EP1', tier: 'ElasticPremium' } // Premium: no cold start for HTTP intake, VNet-ready
  kind: 'elastic'
  properties: { reserved: true }
}

resource app 'Microsoft.Web/sites@2023-12-01' = {
  name: '${prefix}-func-${take(suffix, 6)}'
  location: location
  kind: 'functionapp,linux'
  identity: { type: 'UserAssigned', userAssignedIdentities: { '${appIdentity.id}': {} } }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    keyVaultReferenceIdentity: appIdentity.id
    siteConfig: {
      linuxFxVersion: 'Node|20'
      ftpsState: 'Disabled'
      minTlsVersion: '1.2'
      appSettings: [
        { name: 'FUNCTIONS_EXTENSION_VERSION', value: '~4' }
        { name: 'FUNCTIONS_WORKER_RUNTIME', value: 'node' }
        { name: 'AzureWebJobsStorage__accountName', value: hostStorage.name }
        { name: 'AzureWebJobsStorage__credential', value: 'managedidentity' }
        { name: 'AzureWebJobsStorage__clientId', value: appIdentity.properties.clientId }
        { name: 'AZURE_CLIENT_ID', value: appIdentity.properties.clientId } // DefaultAzureCredential picks this identity
        { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: insights.properties.ConnectionString }
        { name: 'BATCH_ACCOUNT_URL', value: 'https://${batch.properties.accountEndpoint}' }
        { name: 'BATCH_ACCOUNT_NAME', value: batch.name }
        { name: 'STAGING_ACCOUNTS', value: join([for i in range(0, stagingAccountCount): staging[i].name], ',') }
        { name: 'POLL_INITIAL_MS', value: string(pollInitialMs) }
        { name: 'POLL_MAX_MS', value: string(pollMaxMs) }
      ]
    }
  }
}

var hostRoles = [ roles.storageBlobDataOwner, roles.storageQueueDataContributor, roles.storageTableDataContributor ]
resource hostRoleAssignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for r in hostRoles: {
  name: guid(hostStorage.id, appIdentity.id, r)
  scope: hostStorage
  properties: { principalId: appIdentity.properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', r) }
}]

// Staging: read inputs, write shards, and mint user-delegation SAS for the nodes.
resource stagingContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for i in range(0, stagingAccountCount): {
  name: guid(staging[i].id, appIdentity.id, roles.storageBlobDataContributor)
  scope: staging[i]
  properties: { principalId: appIdentity.properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataContributor) }
}]
resource stagingDelegator 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for i in range(0, stagingAccountCount): {
  name: guid(staging[i].id, appIdentity.id, roles.storageBlobDelegator)
  scope: staging[i]
  properties: { principalId: appIdentity.properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDelegator) }
}]

resource batchRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(batch.id, appIdentity.id, roles.contributor)
  scope: batch
  properties: { principalId: appIdentity.properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.contributor) }
}

resource acrPull 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(acr.id, appIdentity.id, roles.acrPull)
  scope: acr
  properties: { principalId: appIdentity.properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.acrPull) }
}

output functionAppName string = app.name
output batchAccountEndpoint string = batch.properties.accountEndpoint
output stagingAccounts array = [for i in range(0, stagingAccountCount): staging[i].name]
output registryLoginServer string = acr.properties.loginServer
