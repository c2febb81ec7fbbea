// Azure deployment of the HPC MPI control plane: Flex Consumption (FC1), managed identities, no keys anywhere.
// `azd up` (azure.yaml) provisions this and deploys the package `npm run package` builds; see infra/README.md.
// Not compiled or deployed from this repository (no Bicep compiler or Azure endpoint is reachable where it is built);
// tests/deploy/infra.test.ts reads it instead (app settings, role assignments, no keys).
targetScope = 'resourceGroup'

@minLength(1)
@maxLength(64)
@description('azd environment name (AZURE_ENV_NAME); seeds the resource names and tags every resource.')
param environmentName string

param location string = resourceGroup().location

@description('How many staging storage accounts shards are spread over (each brings its own egress limit).')
@minValue(1)
@maxValue(20)
param stagingAccountCount int = 4

@description('Storage accounts in this resource group that already hold users\' data. Jobs may name these and the data account created here (DATA_ACCOUNTS), nothing else.')
param existingDataAccountNames array = []

@description('Those of existingDataAccountNames that have a hierarchical namespace (ADLS Gen2). Only HNS accounts can be given a SAS for one job\'s outputs prefix; with OUTPUTS_REQUIRE_SCOPED_SAS (true here) jobs can write outputs to no other account.')
param existingHnsDataAccountNames array = []

@description('Polling of Batch by the orchestrator (durable timers): first and longest interval.')
param pollInitialMs int = 5000
param pollMaxMs int = 60000

@description('Longest lifetime of a SAS URL handed to a node (Azure caps user delegation SAS at 7 days).')
@minValue(1)
@maxValue(168)
param sasMaxLifetimeHours int = 168

@description('Flex Consumption instance memory (MB).')
@allowed([512, 2048, 4096])
param instanceMemoryMB int = 2048

@description('Flex Consumption scale-out limit.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 100

@description('Accepted `aud` values of Entra ID access tokens, comma-separated: the API app registration\'s application id URI and/or client id (docs/security.md, "Setting it up in Azure"). Empty: no bearer tokens are accepted.')
param authAudiences string = ''

@description('Name of the Key Vault secret (in the vault created here) that holds the operator keys, comma-separated, at least 24 characters each. Empty: no operator keys. Create the secret before setting this; an unresolved reference stops the app (shared/adapters/config refuses it).')
param operatorKeysSecretName string = ''

@description('Always-ready instances of the Durable group (orchestrations and activities). Microsoft recommends 1 for Durable Functions on Flex Consumption; 0 scales to zero and pays cold starts.')
@minValue(0)
@maxValue(10)
param durableAlwaysReady int = 1

@description('Address space of the virtual network the pools join (pool.network; POOL_SUBNET_ID is its compute subnet).')
param vnetAddressPrefix string = '10.40.0.0/16'

@description('The compute subnet: every node of every pool takes one address (a /20 holds 4091 nodes).')
param computeSubnetPrefix string = '10.40.0.0/20'

@description('The subnet of the private endpoints (storage, registry, Key Vault, Batch node management).')
param endpointsSubnetPrefix string = '10.40.16.0/24'

// Role ids are declared and checked once, in roles.json (the test and infra/README.md's table read the same file).
var roles = loadJsonContent('roles.json', '$.roles')

var token = toLower(uniqueString(subscription().id, resourceGroup().id, environmentName))
var tags = { 'azd-env-name': environmentName }
var hostStorageName = 'st${token}'
var stagingAccountNames = [for i in range(0, stagingAccountCount): 'stg${i}${take(token, 10)}']
var dataAccountName = 'data${take(token, 10)}'
var deploymentContainerName = 'app-package'
// Must equal host.json extensions.queues.maxDequeueCount (the queue door fails a job on the last attempt).
var queueMaxDequeueCount = 5

resource appIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-app-${token}'
  location: location
  tags: tags
}

// The identity Batch pools run with: nodes pull from the registry and read start-task files with it. The app creates
// pools through the management plane (POOL_IDENTITY_* settings), which assigns it; the data plane could only reference it.
resource poolIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-pool-${token}'
  location: location
  tags: tags
}

resource hostStorage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: hostStorageName
  location: location
  tags: tags
  sku: { name: 'Standard_LRS' }
  kind: 'StorageV2'
  properties: {
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}

resource hostBlobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: hostStorage
  name: 'default'
}

// Flex Consumption runs the app from a package in this container, read with the app identity (no file share, no key).
resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: hostBlobService
  name: deploymentContainerName
  properties: { publicAccess: 'None' }
}

resource staging 'Microsoft.Storage/storageAccounts@2023-05-01' = [for name in stagingAccountNames: {
  name: name
  location: location
  tags: tags
  sku: { name: 'Standard_LRS' }
  kind: 'StorageV2'
  properties: {
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}]

// Where users put job inputs and start-task files. The app only reads it (Storage Blob Data Reader).
resource dataAccount 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: dataAccountName
  location: location
  tags: tags
  sku: { name: 'Standard_LRS' }
  kind: 'StorageV2'
  properties: {
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    // A hierarchical namespace lets the app give a job's nodes a directory SAS (sr=d) on exactly the job's outputs
    // prefix instead of a create/write SAS on the whole container, where root on a node could overwrite another
    // owner's results (docs/security.md, "Data areas"). Set at creation only: an existing flat account must be upgraded.
    isHnsEnabled: true
  }
}

resource existingData 'Microsoft.Storage/storageAccounts@2023-05-01' existing = [for name in existingDataAccountNames: {
  name: name
}]

resource batch 'Microsoft.Batch/batchAccounts@2023-11-01' = {
  name: 'ba${token}'
  location: location
  tags: tags
  properties: {
    poolAllocationMode: 'BatchService'
    allowedAuthenticationModes: [ 'AAD' ]
    publicNetworkAccess: 'Enabled'
  }
}

// ---- the network (infra/README.md, "Network") ------------------------------------------------------------------
// Pools join the compute subnet (POOL_SUBNET_ID: jobs need not know its id) without public IP addresses; nodes
// reach storage, the registry, Key Vault and Batch's node management endpoint through private endpoints in the
// endpoints subnet, resolved by the private DNS zones linked to the network. File servers (a head node's NFS,
// NetApp Files, Azure Files NFS, Managed Lustre) and licence servers the jobs mount or call live in this network too.
resource vnet 'Microsoft.Network/virtualNetworks@2023-11-01' = {
  name: 'vnet-${token}'
  location: location
  tags: tags
  properties: {
    addressSpace: { addressPrefixes: [ vnetAddressPrefix ] }
    subnets: [
      {
        name: 'compute'
        properties: {
          addressPrefix: computeSubnetPrefix
          // Nodes without public IPs reach the internet (package mirrors, public registries) through Batch's
          // simplified node communication and the endpoints only; no default outbound access.
          defaultOutboundAccess: false
          serviceEndpoints: [ { service: 'Microsoft.Storage' } ]
        }
      }
      {
        name: 'endpoints'
        properties: {
          addressPrefix: endpointsSubnetPrefix
          privateEndpointNetworkPolicies: 'Disabled'
        }
      }
    ]
  }
}

resource computeSubnet 'Microsoft.Network/virtualNetworks/subnets@2023-11-01' existing = {
  parent: vnet
  name: 'compute'
}

resource endpointsSubnet 'Microsoft.Network/virtualNetworks/subnets@2023-11-01' existing = {
  parent: vnet
  name: 'endpoints'
}

// One private DNS zone per private-link service, linked to the network so the public names resolve to the endpoints.
var privateZones = [
  'privatelink.blob.${environment().suffixes.storage}'
  'privatelink.azurecr.io'
  'privatelink.vaultcore.azure.net'
  'privatelink.batch.azure.com'
]

resource zones 'Microsoft.Network/privateDnsZones@2020-06-01' = [for zone in privateZones: {
  name: zone
  location: 'global'
  tags: tags
}]

resource zoneLinks 'Microsoft.Network/privateDnsZones/virtualNetworkLinks@2020-06-01' = [for (zone, i) in privateZones: {
  parent: zones[i]
  name: 'vnet-${token}'
  location: 'global'
  properties: {
    virtualNetwork: { id: vnet.id }
    registrationEnabled: false
  }
}]

// Each endpoint: the resource, its sub-resource (group id) and the zone (index into privateZones) its name goes in.
var storageEndpoints = concat(
  [ { name: 'pe-data-blob', id: dataAccount.id, group: 'blob', zone: 0 } ],
  [for (name, i) in stagingAccountNames: { name: 'pe-${name}-blob', id: staging[i].id, group: 'blob', zone: 0 }]
)
var otherEndpoints = [
  { name: 'pe-acr', id: acr.id, group: 'registry', zone: 1 }
  { name: 'pe-vault', id: vault.id, group: 'vault', zone: 2 }
  { name: 'pe-batch-nodemanagement', id: batch.id, group: 'nodeManagement', zone: 3 }
]

resource privateEndpoints 'Microsoft.Network/privateEndpoints@2023-11-01' = [for ep in concat(storageEndpoints, otherEndpoints): {
  name: '${ep.name}-${take(token, 8)}'
  location: location
  tags: tags
  properties: {
    subnet: { id: endpointsSubnet.id }
    privateLinkServiceConnections: [
      {
        name: ep.name
        properties: { privateLinkServiceId: ep.id, groupIds: [ ep.group ] }
      }
    ]
  }
}]

resource privateEndpointZones 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups@2023-11-01' = [for (ep, i) in concat(storageEndpoints, otherEndpoints): {
  parent: privateEndpoints[i]
  name: 'default'
  properties: {
    privateDnsZoneConfigs: [ { name: 'zone', properties: { privateDnsZoneId: zones[ep.zone].id } } ]
  }
}]

resource acr 'Microsoft.ContainerRegistry/registries@2023-07-01' = {
  name: 'cr${token}'
  location: location
  tags: tags
  sku: { name: 'Premium' } // higher concurrent pull limits; pulls are still staggered to at most 10 nodes
  properties: {
    adminUserEnabled: false
    anonymousPullEnabled: false
  }
}

// Registry credentials for private registries other than this one; app settings refer to them as Key Vault references.
resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: 'kv-${token}'
  location: location
  tags: tags
  properties: {
    tenantId: subscription().tenantId
    sku: { family: 'A', name: 'standard' }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 90
    publicNetworkAccess: 'Enabled'
  }
}

// Job events (docs/events.md): every state change of a job as a CloudEvents 1.0 event, published with the app identity
// (EventGrid Data Sender); access keys and SAS are off. Subscriptions (webhooks, queues, functions) are the user's own.
resource eventTopic 'Microsoft.EventGrid/topics@2022-06-15' = {
  name: 'evgt-${token}'
  location: location
  tags: tags
  properties: {
    inputSchema: 'CloudEventSchemaV1_0'
    disableLocalAuth: true
    publicNetworkAccess: 'Enabled'
  }
}

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: 'log-${token}'
  location: location
  tags: tags
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
  }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: 'appi-${token}'
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logs.id
    DisableLocalAuth: true // ingestion only with Entra tokens (Monitoring Metrics Publisher), never the instrumentation key
  }
}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: 'plan-${token}'
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    name: 'FC1'
    tier: 'FlexConsumption'
  }
  properties: {
    reserved: true
  }
}

resource app 'Microsoft.Web/sites@2024-04-01' = {
  name: 'func-${token}'
  location: location
  tags: union(tags, { 'azd-service-name': 'api' })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${appIdentity.id}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    keyVaultReferenceIdentity: appIdentity.id
    siteConfig: {
      minTlsVersion: '1.2'
      ftpsState: 'Disabled'
      // Exactly the settings shared/adapters/config reads, plus the platform's own (tests/deploy/infra.test.ts keeps it so).
      // Flex Consumption sets the runtime in functionAppConfig: no FUNCTIONS_WORKER_RUNTIME, FUNCTIONS_EXTENSION_VERSION
      // or WEBSITE_CONTENT* settings here.
      appSettings: [
        { name: 'AzureWebJobsStorage__accountName', value: hostStorage.name }
        { name: 'AzureWebJobsStorage__credential', value: 'managedidentity' }
        { name: 'AzureWebJobsStorage__clientId', value: appIdentity.properties.clientId }
        { name: 'AZURE_CLIENT_ID', value: appIdentity.properties.clientId }
        { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: insights.properties.ConnectionString }
        { name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING', value: 'ClientId=${appIdentity.properties.clientId};Authorization=AAD' }
        { name: 'STORAGE_ENDPOINT_SUFFIX', value: environment().suffixes.storage }
        { name: 'BATCH_ACCOUNT_URL', value: 'https://${batch.properties.accountEndpoint}' }
        { name: 'BATCH_ACCOUNT_NAME', value: batch.name }
        { name: 'BATCH_SUBSCRIPTION_ID', value: subscription().subscriptionId }
        { name: 'BATCH_RESOURCE_GROUP', value: resourceGroup().name }
        { name: 'POOL_IDENTITY_RESOURCE_ID', value: poolIdentity.id }
        { name: 'POOL_IDENTITY_CLIENT_ID', value: poolIdentity.properties.clientId }
        { name: 'POOL_SUBNET_ID', value: computeSubnet.id }
        { name: 'STAGING_ACCOUNTS', value: join(stagingAccountNames, ',') }
        { name: 'DATA_ACCOUNTS', value: join(concat([ dataAccountName ], existingDataAccountNames), ',') }
        // The data account created here has a hierarchical namespace; the existing ones named as having one too.
        { name: 'DATA_ACCOUNTS_HNS', value: join(concat([ dataAccountName ], existingHnsDataAccountNames), ',') }
        // Outputs only through a SAS on the job's own prefix: refused at intake on a flat account.
        { name: 'OUTPUTS_REQUIRE_SCOPED_SAS', value: 'true' }
        // Every job keeps the full stdout/stderr of every task, in its owner's area (users/<ownerKey>/jobs/<id>/logs/)
        // of the created data account's results container, unless the spec opts out (cleanup.keepLogs: false).
        { name: 'DEFAULT_OUTPUTS', value: '${dataAccountName}/results' }
        { name: 'POLL_INITIAL_MS', value: string(pollInitialMs) }
        { name: 'POLL_MAX_MS', value: string(pollMaxMs) }
        { name: 'SAS_MAX_LIFETIME_HOURS', value: string(sasMaxLifetimeHours) }
        { name: 'QUEUE_MAX_DEQUEUE_COUNT', value: string(queueMaxDequeueCount) }
        { name: 'AUTH_ISSUER', value: empty(authAudiences) ? '' : '${environment().authentication.loginEndpoint}${tenant().tenantId}/v2.0' }
        { name: 'AUTH_AUDIENCES', value: authAudiences }
        { name: 'OPERATOR_API_KEYS', value: empty(operatorKeysSecretName) ? '' : '@Microsoft.KeyVault(VaultName=${vault.name};SecretName=${operatorKeysSecretName})' }
        { name: 'EVENTS_TOPIC_ENDPOINT', value: eventTopic.properties.endpoint }
      ]
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${hostStorage.properties.primaryEndpoints.blob}${deploymentContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: appIdentity.id
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
        alwaysReady: durableAlwaysReady > 0 ? [ { name: 'durable', instanceCount: durableAlwaysReady } ] : []
      }
      // Node 22 LTS (Node 20 ended on 2026-04-30); the local stack runs the same code on Node >= 20.19.
      runtime: {
        name: 'node'
        version: '22'
      }
    }
  }
  // The host reads its storage and the deployment package with the app identity from its first start.
  dependsOn: [
    deploymentContainer
    hostBlobOwner
    hostQueueContributor
    hostTableContributor
  ]
}

// No publishing passwords: deployments authenticate with Entra ID (azd, az functionapp deployment).
resource scmBasicAuth 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2023-12-01' = {
  parent: app
  name: 'scm'
  properties: { allow: false }
}

resource ftpBasicAuth 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2023-12-01' = {
  parent: app
  name: 'ftp'
  properties: { allow: false }
}

// ---- Role assignments: exactly the (role, principal, scope) triples of roles.json ----

resource hostBlobOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(hostStorage.id, appIdentity.id, roles.storageBlobDataOwner.id)
  scope: hostStorage
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataOwner.id)
  }
}

resource hostQueueContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(hostStorage.id, appIdentity.id, roles.storageQueueDataContributor.id)
  scope: hostStorage
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageQueueDataContributor.id)
  }
}

resource hostTableContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(hostStorage.id, appIdentity.id, roles.storageTableDataContributor.id)
  scope: hostStorage
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageTableDataContributor.id)
  }
}

resource stagingContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for i in range(0, stagingAccountCount): {
  name: guid(staging[i].id, appIdentity.id, roles.storageBlobDataContributor.id)
  scope: staging[i]
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataContributor.id)
  }
}]

resource dataReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount.id, appIdentity.id, roles.storageBlobDataContributor.id)
  scope: dataAccount
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataContributor.id)
  }
}

resource existingDataReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for (name, i) in existingDataAccountNames: {
  name: guid(existingData[i].id, appIdentity.id, roles.storageBlobDataContributor.id)
  scope: existingData[i]
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataContributor.id)
  }
}]

resource batchDataContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(batch.id, appIdentity.id, roles.batchDataContributor.id)
  scope: batch
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.batchDataContributor.id)
  }
}

// Pools with the pool identity come from the management plane: pools/write on the account, and the right to assign
// the identity (a linked check Resource Manager makes on the identity itself).
resource batchAccountContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(batch.id, appIdentity.id, roles.batchAccountContributor.id)
  scope: batch
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.batchAccountContributor.id)
  }
}

resource poolIdentityOperator 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(poolIdentity.id, appIdentity.id, roles.managedIdentityOperator.id)
  scope: poolIdentity
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.managedIdentityOperator.id)
  }
}

resource vaultSecretsUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, appIdentity.id, roles.keyVaultSecretsUser.id)
  scope: vault
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultSecretsUser.id)
  }
}

resource insightsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(insights.id, appIdentity.id, roles.monitoringMetricsPublisher.id)
  scope: insights
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher.id)
  }
}

resource eventTopicSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(eventTopic.id, appIdentity.id, roles.eventGridDataSender.id)
  scope: eventTopic
  properties: {
    principalId: appIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.eventGridDataSender.id)
  }
}

resource poolAcrPull 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(acr.id, poolIdentity.id, roles.acrPull.id)
  scope: acr
  properties: {
    principalId: poolIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.acrPull.id)
  }
}

// Jobs' secret references (mpi.env, licenses) are read on the nodes with the pool identity (shared/core/mpi/secretFetch.ts).
resource poolVaultSecretsUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, poolIdentity.id, roles.keyVaultSecretsUser.id)
  scope: vault
  properties: {
    principalId: poolIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultSecretsUser.id)
  }
}

// Start-task files of identity pools are read with the pool identity (resource files with identityReference).
resource poolDataReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(dataAccount.id, poolIdentity.id, roles.storageBlobDataReader.id)
  scope: dataAccount
  properties: {
    principalId: poolIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataReader.id)
  }
}

resource poolExistingDataReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for (name, i) in existingDataAccountNames: {
  name: guid(existingData[i].id, poolIdentity.id, roles.storageBlobDataReader.id)
  scope: existingData[i]
  properties: {
    principalId: poolIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataReader.id)
  }
}]

output AZURE_FUNCTION_APP_NAME string = app.name
output BATCH_ACCOUNT_URL string = 'https://${batch.properties.accountEndpoint}'
output STAGING_ACCOUNTS string = join(stagingAccountNames, ',')
output DATA_ACCOUNTS string = join(concat([ dataAccountName ], existingDataAccountNames), ',')
output REGISTRY_LOGIN_SERVER string = acr.properties.loginServer
output POOL_IDENTITY_RESOURCE_ID string = poolIdentity.id
output KEY_VAULT_URI string = vault.properties.vaultUri
output POOL_SUBNET_ID string = computeSubnet.id
